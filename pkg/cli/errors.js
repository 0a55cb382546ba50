// Errors of the tinker-wasm CLI, as the Python CLI reports them (tinker/cli/client.py
// `handle_api_errors`, exceptions.py): `Error: <what went wrong>` and a line saying what to
// do, on stderr, exit status 1; no stack trace unless --debug or TINKER_DEBUG is set.

/** An error the CLI reports and exits on (Python's `TinkerCliError`). */
export class CliError extends Error {
  /** @param {string} message @param {string | null} [details] @param {number} [exitCode] */
  constructor(message, details = null, exitCode = 1) {
    super(message);
    this.details = details;
    this.exitCode = exitCode;
  }
}

/** The Ctrl-C exit status (Python: KeyboardInterrupt → 130). */
export class Interrupted extends Error {}

const withDetails = (hint, e) => (e?.message ? `${hint}\nDetails: ${e.message}` : hint);

/**
 * Maps an SDK error to the CLI error Python's `handle_api_errors` raises for it.
 * @param {any} e
 * @returns {CliError}
 */
export function cliErrorOf(e) {
  const name = e?.name;
  const details = e?.message ? `Details: ${e.message}` : null;
  switch (name) {
    case 'NotFoundError':
      return new CliError('Resource not found', details);
    case 'AuthenticationError':
      return new CliError('Authentication failed', withDetails('Please check your API key or authentication credentials.', e));
    case 'BillingError':
      return new CliError('Billing issue', withDetails('There is a billing issue with your account. Please check that billing is set up.', e));
    case 'PermissionDeniedError':
      return new CliError('Permission denied', withDetails("You don't have permission to access this resource.", e));
    case 'BadRequestError':
      return new CliError('Invalid request', details);
    case 'UnprocessableEntityError':
      return new CliError('Invalid data provided', details);
    case 'RateLimitError':
      return new CliError('Rate limit exceeded', withDetails('Please wait a moment before trying again.', e));
    case 'InternalServerError':
      return new CliError('Internal server error', withDetails('The Tinker API encountered an internal error. Please try again later.', e));
    case 'APITimeoutError':
      return new CliError('Request timeout', withDetails('The request to Tinker API timed out. Please try again.', e));
    case 'APIConnectionError':
      return new CliError('Connection failed', withDetails('Could not connect to the Tinker API. Please check your network connection.', e));
  }
  if (e && typeof e.status === 'number' && /Error$/.test(name ?? '') && name !== 'TypeError' && name !== 'RangeError') {
    return new CliError(`API error (status ${e.status})`, details);
  }
  if (name === 'APIError' || name === 'APIResponseValidationError' || name === 'RequestFailedError' || name === 'FutureExpiredError') {
    return new CliError('API error occurred', details);
  }
  // A credential or option the SDK rejects before any request (Python: a ValueError or
  // TinkerError while creating the client).
  if ((name === 'TypeError' || name === 'TinkerError') && e?.field !== undefined) {
    return new CliError(`Configuration error: ${e.message}`, 'Please check your Tinker API credentials.');
  }
  return new CliError(`Unexpected error occurred: ${e?.message ?? e}`, null);
}

/**
 * Reports `e` on stderr; resolves to the exit status.
 * @param {any} e @param {{ debug: boolean }} ctx
 */
export function handleError(e, ctx) {
  if (e instanceof Interrupted) return 130;
  const err = e instanceof CliError ? e : cliErrorOf(e);
  if (err.message) process.stderr.write(`Error: ${err.message}\n`);
  if (err.details) process.stderr.write(`${err.details}\n`);
  if (ctx.debug && !(e instanceof CliError) && e?.stack) process.stderr.write(`${e.stack}\n`);
  return err.exitCode ?? 1;
}
