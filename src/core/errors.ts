// One error type for every layer. Adapters render it: HTTP as { error, code },
// SMTP as a reply code, IMAP as NO/BAD. Codes are stable; messages may change.

export const ERROR_CODES = [
  'invalid_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'conflict',
  'payload_too_large',
  'unprocessable_entity',
  'rate_limit_exceeded',
  'monthly_limit_exceeded',
  'daily_limit_exceeded',
  'send_limit_exceeded',
  'internal_error',
  'service_unavailable',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class AppError extends Error {
  override name = 'AppError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    /** Extra response headers (Retry-After, Allow, …). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new AppError(400, 'invalid_request', message);
export const unauthorized = (message = 'Invalid API key') => new AppError(401, 'unauthorized', message);
export const forbidden = (message = 'API key does not have permission') => new AppError(403, 'forbidden', message);
export const notFound = (message = 'Resource not found') => new AppError(404, 'not_found', message);
export const conflict = (message: string) => new AppError(409, 'conflict', message);
export const payloadTooLarge = (message: string) => new AppError(413, 'payload_too_large', message);
export const unprocessable = (message: string) => new AppError(422, 'unprocessable_entity', message);
