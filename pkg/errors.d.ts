/** Base class of every error the SDK raises. Bad input raises `TypeError` / `RangeError` (with a `field` property). */
export declare class TinkerError extends Error {
  constructor(message: string, props?: Record<string, unknown>);
}
/** A failure talking to the API. */
export declare class APIError extends TinkerError {
  /** HTTP status, when there was a response. */
  readonly status?: number;
  /** Response headers (credentials redacted). */
  readonly headers?: Record<string, string>;
  /** The response's `x-request-id`. */
  readonly requestId?: string;
  /** The parsed error body, when it was JSON. */
  readonly body?: unknown;
}
/** The server answered with an error status. */
export declare class APIStatusError extends APIError {
  readonly status: number;
  readonly headers: Record<string, string>;
}
/** HTTP 400. */ export declare class BadRequestError extends APIStatusError {}
/** HTTP 401. */ export declare class AuthenticationError extends APIStatusError {}
/** HTTP 402 (after the billing pause window). */ export declare class BillingError extends APIStatusError {}
/** HTTP 403. */ export declare class PermissionDeniedError extends APIStatusError {}
/** HTTP 404. */ export declare class NotFoundError extends APIStatusError {}
/** HTTP 409. */ export declare class ConflictError extends APIStatusError {}
/** HTTP 422. */ export declare class UnprocessableEntityError extends APIStatusError {}
/** HTTP 429 (after retries). */ export declare class RateLimitError extends APIStatusError {}
/** HTTP 5xx (after retries). */ export declare class InternalServerError extends APIStatusError {}
/** No response: DNS, refused, reset, CORS, or a broken body. */
export declare class APIConnectionError extends APIError {}
/** No response in time (per-request `timeout`, or a call's `timeout`). */
export declare class APITimeoutError extends APIConnectionError {}
/** The call was aborted through its `signal`. */
export declare class APIUserAbortError extends APIError {}
/** The server answered something the client cannot interpret. */
export declare class APIResponseValidationError extends APIError {}
/** The server ran the request and it failed. */
export declare class RequestFailedError extends TinkerError {
  /** The failed request's id. */
  readonly requestId: string;
  /** Whose failure it was: 'user' (the request's), 'server' or 'unknown'. */
  readonly category: 'user' | 'server' | 'unknown';
}
/** The server no longer has the request's result (HTTP 410 while polling). */
export declare class FutureExpiredError extends TinkerError {
  /** The expired request's id. */
  readonly requestId: string;
}
/** The client was closed, or poisoned by an earlier failure. */
export declare class ClientClosedError extends TinkerError {}
