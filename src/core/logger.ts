import { pino, type Logger } from 'pino';

export type { Logger };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** JSON lines to stdout (fd 1) or stderr (fd 2, for CLIs whose stdout carries their answer). */
export function createLogger(level: LogLevel, fd: 1 | 2 = 1): Logger {
  return pino({ level, base: { service: 'mail' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ fd, sync: fd === 2 }));
}
