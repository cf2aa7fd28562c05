// SMTP submission (RFC 6409) on two listeners: MAIL_SUBMISSION_PORT (STARTTLS; AUTH only once the session
// is encrypted) and MAIL_SUBMISSIONS_PORT (implicit TLS, RFC 8314). smtp-server speaks the protocol; the
// hooks below are thin adapters over services/sending/submission.ts, and every refusal is one of the replies in
// REPLY. The listener never throws into smtp-server: an unexpected error is logged and answered 451. Each
// listener goes under stress past 80% of its SUBMISSION_MAX_CLIENTS (./listener-guard.ts).
import type { AddressInfo } from 'node:net';
import { NetworkList } from '../core/trusted-networks.js';
import { trackSessions } from '../core/metrics.js';
import { SMTPServer, type SMTPServerAuthentication, type SMTPServerSession } from 'smtp-server';
import type { AppContext } from '../context.js';
import type { TlsMaterial } from '../core/key-material.js';
import { AppError } from '../core/errors.js';
import { normaliseAddress } from '../core/address.js';
import { ByteBudget, capConnections, ConnectionCaps, readBudgeted, refuseSilently, refuseWith } from '../core/listener-limits.js';
import { controlGreeting, GREET_AT_ONCE } from './greet-pause.js';
import { eachConnection, guardListener, SIZE_EXCEEDED, STRESS_IDLE_TIMEOUT_MS } from './listener-guard.js';
import type { SmtpGuards } from '../limits/smtp-guards.js';
import { isSendQuotaRefusal, QUOTA_SMTP_REPLY, MAX_RECIPIENTS, authenticateSubmitter, submitMessage, type SubmissionStore, type Submitter } from '../services/sending/index.js';

/** Largest message accepted (SIZE, RFC 1870): the API's 36 MB body cap, enough for 25 MB of attachments once encoded. */
export const SUBMISSION_MAX_BYTES = 36 * 1024 * 1024;
/** Connections open at once, per listener. */
export const SUBMISSION_MAX_CLIENTS = 500;
/** An idle connection is closed after this (RFC 5321 §4.5.3.2 suggests 5 minutes for commands). */
export const SUBMISSION_SOCKET_TIMEOUT_MS = 5 * 60_000;
/** The same while the listener is under stress (80% of SUBMISSION_MAX_CLIENTS open, until below 60%). */
export const SUBMISSION_STRESS_SOCKET_TIMEOUT_MS = STRESS_IDLE_TIMEOUT_MS;
/** On stop, open sessions get this long to finish before they are cut. */
export const SUBMISSION_CLOSE_TIMEOUT_MS = 10_000;
/**
 * Connections at once from one client address (an IPv6 /64), both listeners together, counted from the TCP accept
 * (before the implicit-TLS handshake: smtp-server holds a socket that never starts one for the whole socket
 * timeout, and 500 of them from one address filled the listener). Postfix's smtpd_client_connection_count_limit.
 */
export const SUBMISSION_MAX_CONNECTIONS_PER_CLIENT = 50;
/** Message data held in memory at once by sessions in DATA, all together and per client address (as the MX's). */
export const SUBMISSION_MAX_BUFFERED_BYTES = 256 * 1024 * 1024;
export const SUBMISSION_MAX_BUFFERED_BYTES_PER_CLIENT = 80 * 1024 * 1024;

/** Every reply the submission hooks give (smtp-server's own replies aside), with its enhanced status code (RFC 3463). */
export const REPLY = {
  accepted: { code: 250, enhanced: '2.0.0' },
  loginBlocked: { code: 454, enhanced: '4.7.0' },
  badCredentials: { code: 535, enhanced: '5.7.8' },
  rateLimited: { code: 451, enhanced: '4.7.0' },
  quota: QUOTA_SMTP_REPLY, // 451 4.7.1
  badAddress: { code: 553, enhanced: '5.1.3' },
  tooManyRecipients: { code: 452, enhanced: '4.5.3' },
  tooLarge: { code: SIZE_EXCEEDED.code, enhanced: SIZE_EXCEEDED.enhanced },
  noRoom: { code: 452, enhanced: '4.3.1' },
  badMessage: { code: 554, enhanced: '5.6.0' },
  notAuthorised: { code: 550, enhanced: '5.7.1' },
  temporary: { code: 451, enhanced: '4.3.0' },
} as const;

type Reply = (typeof REPLY)[keyof typeof REPLY];

/** An error smtp-server sends as `<code> <enhanced> <text>`. */
class SmtpReply extends Error {
  readonly responseCode: number;
  constructor(reply: Reply, text: string) {
    super(`${reply.enhanced} ${text}`);
    this.responseCode = reply.code;
  }
}

export interface SubmissionOptions {
  ctx: AppContext;
  store: SubmissionStore;
  guards: SmtpGuards;
  tls: TlsMaterial;
  /** The figures of the listeners (the SUBMISSION_* constants unless a test says otherwise). */
  limits?: Partial<SubmissionLimits>;
}

export interface SubmissionLimits {
  maxMessageBytes: number;
  /** Per listener. */
  maxConnections: number;
  maxConnectionsPerClient: number;
  socketTimeoutMs: number;
  stressSocketTimeoutMs: number;
  maxBufferedBytes: number;
  maxBufferedBytesPerClient: number;
}

export interface SubmissionListeners {
  submission: AddressInfo;
  submissions: AddressInfo;
  close(): Promise<void>;
}

const userOf = (session: SMTPServerSession) => session.user as Submitter | undefined;

/** The reply for an error of the send path. */
function replyFor(ctx: AppContext, err: unknown): SmtpReply {
  if (err instanceof SmtpReply) return err;
  if (isSendQuotaRefusal(err)) return new SmtpReply(REPLY.quota, err.message);
  if (err instanceof AppError) {
    if (err.status === 400) return new SmtpReply(REPLY.badMessage, err.message);
    if (err.status === 403 || err.status === 422) return new SmtpReply(REPLY.notAuthorised, err.message);
    if (err.status === 429) return new SmtpReply(REPLY.rateLimited, err.message);
  }
  ctx.log.error({ err }, 'submission: the message could not be accepted');
  return new SmtpReply(REPLY.temporary, 'Temporary failure, please try again later');
}

/** What both listeners share: their figures, the per-address connection count and the memory budget of DATA. */
interface Shared {
  limits: SubmissionLimits;
  caps: ConnectionCaps;
  buffered: ByteBudget;
}

/** The part of smtp-server's connection object that `authOnlyOverTls` touches (not in its published types). */
interface SmtpConnectionInternals {
  _socket: unknown;
  secure: boolean;
  remoteAddress: string;
  handler_EHLO(command: Buffer, callback: () => void): void;
  handler_AUTH(command: Buffer, callback: () => void): void;
}

/**
 * RFC 4954 §4 and RFC 3207: no plaintext mechanism is offered before STARTTLS, or a client set to "no
 * encryption" sends the password in clear before it learns it was pointless. smtp-server lists AUTH in
 * every EHLO answer; for each connection of the plain listener, its EHLO handler runs with no AUTH
 * methods while the session is not yet TLS (the handler is synchronous, so the shared options list is
 * swapped only for that call). After STARTTLS the client's new EHLO lists `AUTH PLAIN LOGIN`.
 *
 * A client on MAIL_TRUSTED_NETWORKS (Dovecot's login_trusted_networks) is the exception, decided here and
 * only here: its EHLO lists AUTH at once and its AUTH runs with smtp-server's `allowInsecureAuth` on for
 * that one call (the 538 check is the handler's first, synchronous step), so it may log in without TLS.
 */
function authOnlyOverTls(server: SMTPServer, trusted: NetworkList): void {
  const internals = server as unknown as { options: { authMethods: string[]; allowInsecureAuth: boolean } };
  eachConnection<SmtpConnectionInternals>(server, (connection) => {
    const isTrusted = trusted.contains(connection.remoteAddress);
    const ehlo = connection.handler_EHLO.bind(connection);
    connection.handler_EHLO = (command, callback) => {
      if (connection.secure || isTrusted) return ehlo(command, callback);
      const methods = internals.options.authMethods;
      internals.options.authMethods = [];
      try {
        ehlo(command, callback);
      } finally {
        internals.options.authMethods = methods;
      }
    };
    if (!isTrusted) return;
    const auth = connection.handler_AUTH.bind(connection);
    connection.handler_AUTH = (command, callback) => {
      internals.options.allowInsecureAuth = true;
      try {
        auth(command, callback);
      } finally {
        internals.options.allowInsecureAuth = false;
      }
    };
  });
}

function createServer(opts: SubmissionOptions, secure: boolean, shared: Shared): SMTPServer {
  const { ctx, store, guards, tls } = opts;
  const { limits } = shared;
  const log = ctx.log.child({ component: 'submission' });
  const server = new SMTPServer({
    name: ctx.config.hostname,
    banner: 'submission',
    secure,
    key: tls.key,
    cert: tls.cert,
    // AUTH only over TLS: on the STARTTLS port smtp-server answers AUTH on a plain session with
    // "538 Must issue a STARTTLS command first", and `authOnlyOverTls` keeps it out of EHLO there; MAIL
    // needs AUTH (530).
    authOptional: false,
    allowInsecureAuth: false,
    hideSTARTTLS: false,
    authMethods: ['PLAIN', 'LOGIN'],
    // Our replies carry their own enhanced codes (REPLY); smtp-server's defaults would add a second, generic one.
    hideENHANCEDSTATUSCODES: true,
    size: limits.maxMessageBytes, // advertised in EHLO; a larger declared SIZE is answered by guardListener
    maxClients: limits.maxConnections,
    socketTimeout: limits.socketTimeoutMs,
    closeTimeout: SUBMISSION_CLOSE_TIMEOUT_MS,
    disableReverseLookup: true,
    // TCP_NODELAY from the accept (smtp-server sets it too, once the session starts): a reply is one write.
    noDelay: true,
    logger: false,

    onAuth(auth: SMTPServerAuthentication, session: SMTPServerSession, callback) {
      const ip = session.remoteAddress;
      const username = auth.username ?? '';
      if (guards.loginBlocked(ip, username)) {
        return callback(new SmtpReply(REPLY.loginBlocked, 'Too many failed logins; try again later'));
      }
      authenticateSubmitter(ctx, store, username, auth.password ?? '')
        .then((who) => {
          if (!who) {
            guards.loginFailed(ip, username);
            return callback(new SmtpReply(REPLY.badCredentials, 'Authentication credentials invalid'));
          }
          callback(null, { user: who });
        })
        .catch((err: unknown) => callback(replyFor(ctx, err)));
    },

    onMailFrom(_address, session, callback) {
      const who = userOf(session);
      if (who?.kind === 'mailbox') {
        // Spec, Limits: 60 messages per hour per mailbox login (a refused attempt counts too).
        const hit = guards.mailboxSubmission(String(who.account.id));
        if (!hit.allowed) {
          return callback(new SmtpReply(REPLY.rateLimited, `Rate limit: at most ${hit.limit} messages per hour per mailbox; try again in ${hit.retryAfter} s`));
        }
      }
      callback();
    },

    onRcptTo(address, session, callback) {
      if (!normaliseAddress(address.address)) return callback(new SmtpReply(REPLY.badAddress, `<${address.address}> is not a valid address`));
      if (session.envelope.rcptTo.length >= MAX_RECIPIENTS) {
        return callback(new SmtpReply(REPLY.tooManyRecipients, `Too many recipients: at most ${MAX_RECIPIENTS} per message`));
      }
      callback();
    },

    onData(stream, session, callback) {
      const who = userOf(session);
      const client = session.remoteAddress;
      readBudgeted(stream, shared.buffered, client, limits.maxMessageBytes)
        .then(async ({ raw, tooBig: tooLarge, noRoom, reserved }) => {
          try {
            if (tooLarge) throw new SmtpReply(REPLY.tooLarge, SIZE_EXCEEDED.text);
            if (noRoom) throw new SmtpReply(REPLY.noRoom, 'Insufficient system storage, try again later');
            if (!who) throw new SmtpReply(REPLY.notAuthorised, 'Authentication required');
            const recipients = session.envelope.rcptTo.map((r) => r.address);
            const result = await submitMessage(ctx, store, who, { recipients, raw });
            ctx.metrics.smtpMessages.inc({ listener: 'submission' });
            callback(null, `${REPLY.accepted.enhanced} Ok: queued as ${result.id}`);
          } finally {
            shared.buffered.release(client, reserved);
          }
        })
        .catch((err: unknown) => callback(replyFor(ctx, err)));
    },
  });
  const gauge = guardListener(server, {
    log,
    listener: secure ? 'submissions' : 'submission',
    capacity: limits.maxConnections,
    idleTimeoutMs: limits.socketTimeoutMs,
    stressIdleTimeoutMs: limits.stressSocketTimeoutMs,
    maxMessageBytes: limits.maxMessageBytes,
  });
  trackSessions(server.server, ctx.metrics, secure ? 'submissions' : 'submission');
  if (!secure) authOnlyOverTls(server, new NetworkList(ctx.config.trustedNetworks));
  // Authenticated users, not bots to test: greeted at once (smtp-server alone waits 100 ms).
  controlGreeting(server, GREET_AT_ONCE, log);
  capConnections(server.server, shared.caps, secure ? refuseSilently : refuseWith('421 4.7.0 Too many connections from your address, try again later\r\n'), gauge);
  return server;
}

function listen(server: SMTPServer, bind: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, bind, () => {
      server.server.off('error', reject);
      resolve(server.server.address() as AddressInfo);
    });
  });
}

const closeServer = (server: SMTPServer) => new Promise<void>((resolve) => server.close(() => resolve()));

/** Starts both submission listeners on the configured ports (0: any free port). */
export async function startSubmission(opts: SubmissionOptions): Promise<SubmissionListeners> {
  const { config } = opts.ctx;
  const limits: SubmissionLimits = {
    maxMessageBytes: SUBMISSION_MAX_BYTES,
    maxConnections: SUBMISSION_MAX_CLIENTS,
    socketTimeoutMs: SUBMISSION_SOCKET_TIMEOUT_MS,
    stressSocketTimeoutMs: SUBMISSION_STRESS_SOCKET_TIMEOUT_MS,
    maxConnectionsPerClient: SUBMISSION_MAX_CONNECTIONS_PER_CLIENT,
    maxBufferedBytes: SUBMISSION_MAX_BUFFERED_BYTES,
    maxBufferedBytesPerClient: SUBMISSION_MAX_BUFFERED_BYTES_PER_CLIENT,
    ...opts.limits,
  };
  const shared: Shared = {
    limits,
    // smtp-server's maxClients caps each listener's total; this cap is per client address, across both.
    caps: new ConnectionCaps({ total: Number.POSITIVE_INFINITY, perClient: limits.maxConnectionsPerClient }),
    buffered: new ByteBudget(limits.maxBufferedBytes, limits.maxBufferedBytesPerClient),
  };
  const plain = createServer(opts, false, shared);
  const implicit = createServer(opts, true, shared);
  try {
    const submission = await listen(plain, config.bind, config.submissionPort);
    const submissions = await listen(implicit, config.bind, config.submissionsPort);
    return { submission, submissions, close: async () => void (await Promise.all([closeServer(plain), closeServer(implicit)])) };
  } catch (err) {
    await Promise.all([closeServer(plain), closeServer(implicit)]);
    throw err;
  }
}
