// What the MX and the two submission listeners add to smtp-server on each listener, for what a peer can drive:
//   stress   Postfix's STRESS (postconf(5): smtpd_timeout ${stress?10}s:300s, smtpd_hard_error_limit
//            ${stress?1}:20): once a listener's open sockets reach STRESS_ENTER_SHARE of its capacity, every
//            session (those already open too, and sockets still in their implicit-TLS handshake) gets the
//            short idle timeout, a session that makes more than STRESS_MAX_ERRORS errors without delivering a
//            message is closed, and an address may not open more once it holds STRESS_CLIENT_SHARE of the
//            capacity; until the sockets fall below STRESS_LEAVE_SHARE (sessions opened meanwhile keep the short
//            timeout). Peers that hold sessions without using them (idle, or trickling a byte now and then) are
//            shed, and cannot take the room back at once; a sender that talks gets through.
//   SIZE     RFC 1870 §6: a declared SIZE over the figure EHLO advertises is 552 5.3.4 with the RFC's text
//            (smtp-server's own answer carries neither the enhanced code nor that text).
//   errors   a failed TLS handshake, or a socket error a client causes, is one short warn line (client,
//            reason), never a stack trace: a peer can make one per connection.
// smtp-server keeps these in its connection objects; the parts touched are named in ConnectionInternals and
// ServerInternals, and the tests of both listeners go through each of them.
import type net from 'node:net';
import type { SMTPServer } from 'smtp-server';
import type { Logger } from '../core/logger.js';
import { STRESS_ENTER_SHARE, STRESS_LEAVE_SHARE, StressGauge } from '../core/listener-limits.js';

/** The idle timeout of every session while the listener is under stress (Postfix: 10 s, against 300 s). */
export const STRESS_IDLE_TIMEOUT_MS = 10_000;
/**
 * Errors a session may make under stress without delivering a message; one more closes it. Only permanent refusals
 * (5xx: a bad command, an unknown recipient, a failed login) count: a 4xx is the box's own state (452 4.5.3 too many
 * recipients, which RFC 5321 §4.5.3.1.10 has the client answer by sending DATA for the others; 452 4.3.1 memory;
 * 451 a local failure), not the client misbehaving.
 */
export const STRESS_MAX_ERRORS = 1;

/** RFC 1870 §6.1 and RFC 3463 (5.3.4): a message over the advertised SIZE, declared or sent. */
export const SIZE_EXCEEDED = { code: 552, enhanced: '5.3.4', text: 'Message size exceeds fixed maximum message size' } as const;
const TOO_MANY_ERRORS = { code: 421, text: '4.7.0 Too many errors, try again later' } as const;

export interface ListenerGuardOptions {
  log: Logger;
  /** Named in the log lines: 'mx', 'submission', 'submissions'. */
  listener: string;
  /** Sessions at once (smtp-server's maxClients): the share of it in use decides stress. */
  capacity: number;
  /** The idle timeout out of stress, and under it. */
  idleTimeoutMs: number;
  stressIdleTimeoutMs: number;
  /** The advertised SIZE. */
  maxMessageBytes: number;
}

/** The parts of smtp-server's connection object used here (typed in its .d.ts, not documented). */
interface ConnectionInternals {
  _socket: net.Socket;
  send(code: number, data?: string | string[] | null, context?: string | false): void;
  _armTimeout(socket?: net.Socket): void;
  _validateMailParams(parsed: { args?: Record<string, unknown> | false }): { code: number; message: string; enhancedCode: string | null } | null;
}

interface ServerInternals {
  options: { socketTimeout?: number };
  connections: Set<ConnectionInternals>;
  /** Accepted sockets not yet in a session (implicit TLS handshake), mapped to the socket their timeout runs on. */
  _pendingSockets: Map<net.Socket, net.Socket>;
  connect(socket: net.Socket, options: unknown): void;
}

/**
 * Runs `instrument` on each SMTP session of `server` as it starts (before its greeting). A session refused at once
 * (smtp-server's maxClients) has left the set again when connect() returns, and is not instrumented.
 */
export function eachConnection<C extends { _socket: unknown }>(server: SMTPServer, instrument: (connection: C) => void): void {
  const internals = server as unknown as { connect(socket: unknown, options: unknown): void; connections: Set<C> };
  const connect = internals.connect.bind(server);
  internals.connect = (socket, options) => {
    connect(socket, options);
    let connection: C | undefined;
    for (const c of internals.connections) if (c._socket === socket) connection = c; // the new session's own socket
    if (connection) instrument(connection);
  };
}

/** The client and a short reason of a connection error, as smtp-server reports it. */
function describe(err: unknown): { client: string | undefined; reason: string; tls: boolean } {
  const e = (err ?? {}) as { code?: unknown; reason?: unknown; message?: unknown; remoteAddress?: unknown; meta?: { remoteAddress?: unknown; message?: unknown; stage?: unknown } };
  const client = typeof e.meta?.remoteAddress === 'string' ? e.meta.remoteAddress : typeof e.remoteAddress === 'string' ? e.remoteAddress : undefined;
  // OpenSSL's reason ('wrong version number', 'tlsv1 alert unknown ca'), else the code, else the message's first line.
  const raw = typeof e.reason === 'string' ? e.reason : typeof e.meta?.message === 'string' ? e.meta.message : typeof e.code === 'string' ? e.code : String(e.message ?? 'unknown');
  const reason = raw.split('\n')[0]!.slice(0, 200);
  const code = typeof e.code === 'string' ? e.code : '';
  // smtp-server marks what a handshake left behind with stage 'connect' (implicit TLS and STARTTLS alike).
  const tls = e.meta?.stage === 'connect' || /^ERR_(SSL|TLS)_/.test(code) || code === 'TLSError';
  return { client, reason, tls };
}

/** Errors already logged: a failed STARTTLS handshake reaches smtp-server as 'error' and '_tlsError', one object. */
const logged = new WeakSet<object>();

/** Logs an error smtp-server emits for a connection: one short line, no stack. */
export function logConnectionError(log: Logger, listener: string, err: unknown): void {
  if (typeof err === 'object' && err !== null) {
    if (logged.has(err)) return;
    logged.add(err);
  }
  const { client, reason, tls } = describe(err);
  // A socket that closed before its handshake began (a port probe, a health check) is no failure worth a warning.
  if ((err as { report?: unknown } | null)?.report === false) return log.debug({ listener, client, reason }, 'connection closed before TLS');
  log.warn({ listener, client, reason }, tls ? 'TLS handshake failed' : 'connection error');
}

/**
 * Adds stress, the SIZE reply and short error lines to an smtp-server listener; the gauge it answers goes to
 * capConnections, which counts the listener's sockets from the TCP accept. Call before the server listens.
 */
export function guardListener(server: SMTPServer, opts: ListenerGuardOptions): StressGauge {
  const { log, listener } = opts;
  const internals = server as unknown as ServerInternals;
  internals.options.socketTimeout = opts.idleTimeoutMs;
  /** The socket each session's idle timeout runs on (after STARTTLS, the TLS socket; during it, the new one). */
  const timed = new WeakMap<ConnectionInternals, net.Socket>();

  /** Every session open now, and every socket still in its handshake, gets `ms` of idleness from here. */
  const retimeAll = (ms: number) => {
    // Without a callback setTimeout only restarts the socket's timer with the new figure; its listener stays.
    for (const connection of internals.connections) (timed.get(connection) ?? connection._socket).setTimeout(ms);
    for (const socket of internals._pendingSockets.values()) socket.setTimeout(ms);
  };
  const gauge = new StressGauge(opts.capacity, (stressed, open) => {
    const figures = { listener, open, capacity: opts.capacity, enterAt: Math.ceil(opts.capacity * STRESS_ENTER_SHARE), leaveBelow: Math.ceil(opts.capacity * STRESS_LEAVE_SHARE) };
    if (stressed) {
      log.warn({ ...figures, idleTimeoutMs: opts.stressIdleTimeoutMs }, 'entering stress: short timeouts for every session');
      internals.options.socketTimeout = opts.stressIdleTimeoutMs; // what smtp-server arms from now on
      retimeAll(opts.stressIdleTimeoutMs);
    } else {
      // Sessions open now keep the short timeout (as Postfix's do): given back the long one, the squatters not
      // shed yet when the count fell below the mark would hold their places again.
      log.info({ ...figures, idleTimeoutMs: opts.idleTimeoutMs }, 'leaving stress: the usual timeouts for new sessions');
      internals.options.socketTimeout = opts.idleTimeoutMs;
    }
  });

  eachConnection<ConnectionInternals>(server, (connection) => {
    const arm = connection._armTimeout.bind(connection);
    connection._armTimeout = (socket = connection._socket) => {
      timed.set(connection, socket);
      arm(socket);
    };
    timed.set(connection, connection._socket); // armed before connect() returned

    const validate = connection._validateMailParams.bind(connection);
    connection._validateMailParams = (parsed) => {
      const size = parsed.args ? parsed.args.SIZE : undefined;
      if (typeof size === 'string' && /^\d{1,20}$/.test(size) && Number(size) > opts.maxMessageBytes) {
        return { code: SIZE_EXCEEDED.code, message: `${SIZE_EXCEEDED.enhanced} ${SIZE_EXCEEDED.text}`, enhancedCode: null };
      }
      return validate(parsed);
    };

    let errors = 0;
    const send = connection.send.bind(connection);
    connection.send = (code, data, context) => {
      send(code, data, context);
      if (context === 'DATA_OK') errors = 0; // smtp-server's context of an accepted message
      if (code < 500 || !gauge.stressed) return;
      if (++errors > STRESS_MAX_ERRORS) send(TOO_MANY_ERRORS.code, TOO_MANY_ERRORS.text, false); // 421 closes
    };
  });

  server.on('error', (err) => logConnectionError(log, listener, err));
  return gauge;
}
