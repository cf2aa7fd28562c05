// The one error handler: AppError → { error, code } with its status; anything else is logged and
// answered 500 internal_error. No stack trace or internal message ever reaches a client.
import type Koa from 'koa';
import type { Logger } from '../../core/logger.js';
import { AppError, type ErrorCode } from '../../core/errors.js';

const STATUS_CODES: Record<number, ErrorCode> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'invalid_request',
  422: 'unprocessable_entity',
  429: 'rate_limit_exceeded',
  503: 'service_unavailable',
};

export function errorHandler(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      if (err instanceof AppError) {
        ctx.status = err.status;
        ctx.set(err.headers);
        ctx.body = { error: err.message, code: err.code };
        return;
      }
      // Errors thrown by Koa itself or its libraries carry an HTTP status (e.g. malformed URIs).
      const status = (err as { status?: unknown }).status;
      if (typeof status === 'number' && status >= 400 && status < 500) {
        const code = STATUS_CODES[status] ?? 'invalid_request';
        ctx.status = status;
        ctx.body = { error: (err as { expose?: boolean }).expose ? (err as Error).message : 'Bad request', code };
        return;
      }
      log.error({ err, method: ctx.method, path: ctx.path }, 'unhandled error');
      ctx.status = 500;
      ctx.body = { error: 'Internal server error', code: 'internal_error' };
    }
  };
}
