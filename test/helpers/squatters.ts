// For tests of listeners under abuse: peers that connect and say nothing, a bound on how long a test waits, and a
// logger whose lines the test can read.
import net from 'node:net';
import { pino, type Logger } from 'pino';

/** `p`, or a failure naming `what` after `ms` (a bound far above what it takes, so that a failure is not a hang). */
export const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms).unref())]);

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** A pino logger at debug level, and every line it wrote, parsed. */
export function capturedLog(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) });
  return { log, lines };
}

/** A squatter: a connection that reads what it is told and says nothing (no TLS handshake either). */
export interface Squatter {
  socket: net.Socket;
  /** All it was told. */
  said: () => string;
  closed: Promise<void>;
}

/** A squatter on 127.0.0.1:`port` from `localAddress`, once connected. */
export function squat(port: number, localAddress: string): Promise<Squatter> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    let said = '';
    socket.on('error', () => {});
    socket.on('data', (d: Buffer) => void (said += d.toString('latin1')));
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.once('connect', () => resolve({ socket, said: () => said, closed }));
  });
}
