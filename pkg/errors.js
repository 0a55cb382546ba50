// Error classes of tinker-wasm (openai-node style). The wasm module constructs these;
// they are plain JS classes so `instanceof` works and stack traces are native.

/** Base class of every error the SDK raises (bad input raises TypeError / RangeError). */
export class TinkerError extends Error {
  constructor(message, props) {
    super(message);
    this.name = new.target.name;
    if (props) Object.assign(this, props);
  }
}

/** A failure talking to the API (status errors, connection problems, timeouts, aborts). */
export class APIError extends TinkerError {}

/** The server answered with an error status. Has `status`, `headers`, `requestId`, `body`. */
export class APIStatusError extends APIError {}
export class BadRequestError extends APIStatusError {}
export class AuthenticationError extends APIStatusError {}
export class BillingError extends APIStatusError {}
export class PermissionDeniedError extends APIStatusError {}
export class NotFoundError extends APIStatusError {}
export class ConflictError extends APIStatusError {}
export class UnprocessableEntityError extends APIStatusError {}
export class RateLimitError extends APIStatusError {}
export class InternalServerError extends APIStatusError {}

/** No response: DNS, refused, reset, CORS, or a broken body. */
export class APIConnectionError extends APIError {}
/** No response in time. */
export class APITimeoutError extends APIConnectionError {}
/** The call was aborted through its AbortSignal. */
export class APIUserAbortError extends APIError {}
/** The server answered something this client cannot interpret. */
export class APIResponseValidationError extends APIError {}

/** The server ran the request and it failed. `category` is 'user', 'server' or 'unknown'. */
export class RequestFailedError extends TinkerError {}
/** The server no longer has this request's result (HTTP 410 while polling). */
export class FutureExpiredError extends TinkerError {}
/** The client was closed, or poisoned by an earlier failure. */
export class ClientClosedError extends TinkerError {}

export const errorClasses = {
  TinkerError, APIError, APIStatusError, BadRequestError, AuthenticationError, BillingError, PermissionDeniedError,
  NotFoundError, ConflictError, UnprocessableEntityError, RateLimitError, InternalServerError, APIConnectionError,
  APITimeoutError, APIUserAbortError, APIResponseValidationError, RequestFailedError, FutureExpiredError,
  ClientClosedError,
};
