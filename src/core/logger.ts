import { pino, type Logger } from 'pino';
import type { LogLevel } from '../config.js';

export type { Logger };

/** JSON lines to stdout (fd 1) or stderr (fd 2, for CLIs whose stdout carries their answer). */
export function createLogger(level: LogLevel, fd: 1 | 2 = 1): Logger {
  return pino({ level, base: { service: 'mail' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ fd, sync: fd === 2 }));
}
