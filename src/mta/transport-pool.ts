// Outbound SMTP sessions, pooled per destination (address, port, TLS policy, credentials) and reused
// across deliveries, over nodemailer's SMTP client (`nodemailer/lib/smtp-connection`).
//
// Why not nodemailer's own pooled transport (`createTransport({ pool: true })`): its result does not say
// which connection carried a message, so whether the session was encrypted (`RouteTaken.tls`) cannot be
// known; it cannot tell "the host never answered" (try the next MX) from "the transaction failed" (stop:
// another MX could deliver a duplicate); and it re-sends a message by itself when a connection drops,
// where the MTA leaves every retry to the job queue's backoff. This pool keeps its behaviour otherwise:
// up to `connectionsPerHost` sessions per destination, RSET after a refused message, a session replaced
// after 100 messages, idle sessions closed, one retry on a fresh session when a pooled one turns out to
// have been closed by the server before anything was sent.
import type { Readable } from 'node:stream';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { Logger } from '../core/logger.js';

export type SmtpError = SMTPConnection.SMTPError;

/**
 * STARTTLS policy of a session. opportunistic: STARTTLS when offered, plaintext when not offered or when
 * the server refuses the command; required: no transaction without TLS; off: never (the plaintext retry
 * after a failed handshake).
 */
export type StartTlsPolicy = 'opportunistic' | 'required' | 'off';

export interface SmtpTarget {
  /** An IP address (MX hosts are resolved through the box's resolver first), or a relay's host name. */
  host: string;
  port: number;
  /** The host name behind the address: TLS SNI and messages. */
  servername?: string | undefined;
  /** TLS from the first byte (smtps://). */
  implicitTls: boolean;
  starttls: StartTlsPolicy;
  auth?: { user: string; pass: string } | undefined;
  /** The local address to connect from (a dedicated outbound address); the system's choice when unset. */
  localAddress?: string | undefined;
  /** The EHLO name for this source address; the pool's hostname when unset. */
  helo?: string | undefined;
}

export interface SmtpEnvelope {
  from: string;
  to: string[];
}

export type SendResult =
  | {
      ok: true;
      /** The session was encrypted. */
      secure: boolean;
      accepted: string[];
      /** One error per refused recipient (`recipient`, `responseCode`, `response`). */
      rejected: SmtpError[];
      /** The server's reply to the end of DATA. */
      response: string;
    }
  | {
      ok: false;
      /** connect: no session was set up (connection, greeting, EHLO, TLS, AUTH): nothing was sent. transaction: MAIL FROM onwards. */
      stage: 'connect' | 'transaction';
      secure: boolean;
      error: SmtpError;
    };

/** Our error codes, beside nodemailer's (ECONNECTION, ETIMEDOUT, ESOCKET, EDNS, ETLS, EAUTH, EPROTOCOL, EENVELOPE, EMESSAGE). */
export const ENOSTARTTLS = 'ENOSTARTTLS';
export const ENOAUTH = 'ENOAUTH';
export const EDEADLINE = 'EDEADLINE';
export const ECLOSED = 'ECLOSED';
/** A recipient not sent because its address needs SMTPUTF8 and the server does not offer it (RFC 6531). */
export const ESMTPUTF8 = 'ESMTPUTF8';

/** An address with non-ASCII characters: only a transaction with the SMTPUTF8 parameter may carry it (RFC 6531 §3.4). */
export const needsSmtpUtf8 = (address: string) => /[^\x00-\x7f]/.test(address);

/** Whether the server's EHLO offered SMTPUTF8: nodemailer keeps the keywords in a list its types do not publish. */
const offersSmtpUtf8 = (conn: SMTPConnection) => ((conn as unknown as { _supportedExtensions?: string[] })._supportedExtensions ?? []).includes('SMTPUTF8');

export interface TransportPoolOptions {
  /** EHLO name. */
  hostname: string;
  /** Connect, greeting and inactivity timeout. */
  timeoutMs: number;
  connectionsPerHost: number;
  log: Logger;
  /** An unused session is closed after this long (default 30 s). */
  idleMs?: number;
  /** A session is replaced after this many messages (default 100). */
  maxMessages?: number;
  /** Clock for the suspension of unreachable hosts (default Date.now). */
  now?: () => number;
}

export interface TransportPool {
  /** Runs one SMTP transaction. Never rejects for remote trouble: the result says what happened. */
  send(target: SmtpTarget, envelope: SmtpEnvelope, raw: Buffer): Promise<SendResult>;
  /** Says QUIT on idle sessions, ends busy ones as their transaction finishes; resolves once all are gone. */
  close(): Promise<void>;
}

/** A whole transaction (envelope and DATA) may take this many times the inactivity timeout: a server
 *  trickling its replies is never idle long enough for the socket timeout to notice. */
const TRANSACTION_TIMEOUT_FACTOR = 10;
const DEFAULT_IDLE_MS = 30_000;
const DEFAULT_MAX_MESSAGES = 100;
/** After QUIT, how long close() waits for a server's 221 before dropping the socket. */
const QUIT_GRACE_MS = 2_000;

function smtpError(message: string, code: string): SmtpError {
  return Object.assign(new Error(message), { code });
}

/** The session ended under us rather than the server refusing something. */
const isDisconnect = (err: SmtpError) => err.responseCode === 421 || ['ECONNECTION', 'ESOCKET', 'ETIMEDOUT'].includes(err.code ?? '');

/**
 * How long a host that gave no session at all (connection refused, reset or timed out, no greeting, the
 * session refused at the greeting) is left alone: new sessions to it fail at once, with the reason it gave,
 * as Postfix's "delivery temporarily suspended". Without this every delivery queued for a blackholed host
 * waited out its own connection timeout while it held one of the box's delivery slots, so a few hundred
 * emails to one dead domain stalled the whole queue for tens of minutes. Once the window is over, one
 * delivery tries the host again (the probe); the others keep failing at once until it has its answer. An
 * MX host that is suspended makes the next MX host be tried at once.
 */
export const SUSPEND_MS = 60_000;
/** Hosts remembered as unreachable before the expired ones are pruned. */
const MAX_SUSPENDED_HOSTS = 1_000;

/** A session attempt that failed because the host did not give one: what suspends it. */
function isUnreachable(err: SmtpError): boolean {
  if (err.code === 'EPROTOCOL') return err.command === 'CONN'; // greeting refused (421, 554) or garbled
  return ['ECONNECTION', 'ESOCKET', 'ETIMEDOUT', 'EDNS'].includes(err.code ?? '');
}

/** The error of a session not even attempted because its host is suspended. */
export interface SuspendedError extends SmtpError {
  /** The error that suspended the host (its code, reply and timeout type are copied to this one). */
  suspendedBy: SmtpError;
}
export const isSuspended = (err: SmtpError): err is SuspendedError => 'suspendedBy' in err;

/** Which hosts (address or relay name, and port) are suspended, shared by every pool to them. */
class HostHealth {
  private readonly down = new Map<string, { until: number; error: SmtpError; probing: boolean }>();
  /**
   * Sessions open or opening to each host, in every pool: pools to one address differ by TLS policy and server
   * name (two teams' tls_mode, a provider's per-tenant MX names), and a host that serves one of them is up.
   */
  private readonly open = new Map<string, number>();

  constructor(private readonly now: () => number) {}

  count(host: string, by: 1 | -1): void {
    const n = (this.open.get(host) ?? 0) + by;
    if (n <= 0) this.open.delete(host);
    else this.open.set(host, n);
  }

  sessions(host: string): number {
    return this.open.get(host) ?? 0;
  }

  /** Null: connect (as the probe, if the host was suspended). Otherwise the error to fail with at once. */
  admit(host: string): SuspendedError | null {
    const entry = this.down.get(host);
    if (!entry) return null;
    if (entry.probing || this.now() < entry.until) {
      const { error } = entry;
      return Object.assign(smtpError(error.message, error.code ?? 'ECONNECTION'), {
        suspendedBy: error,
        response: error.response,
        responseCode: error.responseCode,
        timeoutType: error.timeoutType,
        originalCode: error.originalCode,
      });
    }
    entry.probing = true;
    return null;
  }

  reachable(host: string): void {
    this.down.delete(host);
  }

  unreachable(host: string, error: SmtpError): void {
    const now = this.now();
    if (this.down.size >= MAX_SUSPENDED_HOSTS) for (const [k, e] of this.down) if (!e.probing && e.until <= now) this.down.delete(k);
    this.down.delete(host); // most recent last
    this.down.set(host, { until: now + SUSPEND_MS, error, probing: false });
  }
}

interface Session {
  conn: SMTPConnection;
  messages: number;
  /** The connection has ended or failed. */
  dead: boolean;
  /** Counted out of the pool (once). */
  discarded: boolean;
  idleTimer?: NodeJS.Timeout | undefined;
  ended: Promise<void>;
}

class DestinationPool {
  private readonly idle: Session[] = [];
  private readonly sessions = new Set<Session>();
  private readonly waiters: Array<() => void> = [];
  /** send() calls under way (waiting, connecting, or in a transaction). */
  private inFlight = 0;
  private closed = false;

  constructor(
    private readonly target: SmtpTarget,
    private readonly opts: Required<TransportPoolOptions>,
    /** Called when the pool holds no session and no send() is under way: the owner forgets it. */
    private readonly onEmpty: () => void,
    private readonly ownerClosed: () => boolean,
    private readonly health: HostHealth,
  ) {}

  private get hostKey(): string {
    return `${this.target.host}|${this.target.port}`;
  }

  async send(envelope: SmtpEnvelope, raw: Buffer): Promise<SendResult> {
    this.inFlight++;
    try {
      return await this.sendOnce(envelope, raw);
    } finally {
      this.inFlight--;
      this.forgetIfUnused();
    }
  }

  private async sendOnce(envelope: SmtpEnvelope, raw: Buffer): Promise<SendResult> {
    for (let staleRetry = false; ; staleRetry = true) {
      let lease: { session: Session; reused: boolean };
      try {
        lease = await this.acquire();
      } catch (err) {
        return { ok: false, stage: 'connect', secure: false, error: err as SmtpError };
      }
      const { result, bodyStarted } = await this.transact(lease.session, envelope, raw);
      // A pooled session may have been closed by the server while it sat idle; if not a byte of the
      // message went out, the message goes over a fresh session (once).
      if (!result.ok && lease.reused && !bodyStarted && !staleRetry && isDisconnect(result.error)) continue;
      return result;
    }
  }

  private async acquire(): Promise<{ session: Session; reused: boolean }> {
    for (;;) {
      if (this.closed || this.ownerClosed()) throw smtpError('The SMTP connection pool is closed', ECLOSED);
      const session = this.idle.pop();
      if (session) {
        clearTimeout(session.idleTimer);
        if (!session.dead) return { session, reused: true };
        this.discard(session);
        continue;
      }
      if (this.sessions.size < this.opts.connectionsPerHost) {
        const suspended = this.health.admit(this.hostKey);
        if (suspended) throw suspended;
        return { session: await this.connect(), reused: false };
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private wakeOne(): void {
    this.waiters.shift()?.();
  }

  private async connect(): Promise<Session> {
    const t = this.target;
    const ms = this.opts.timeoutMs;
    const conn = new SMTPConnection({
      host: t.host,
      port: t.port,
      secure: t.implicitTls,
      servername: t.servername,
      name: t.helo ?? this.opts.hostname,
      ...(t.localAddress ? { localAddress: t.localAddress } : {}),
      connectionTimeout: ms,
      greetingTimeout: ms,
      socketTimeout: ms,
      dnsTimeout: ms,
      // Enforced TLS is checked below (the session must end up encrypted), so that a server that does not
      // offer STARTTLS is told apart from one that refuses it or fails the handshake.
      opportunisticTLS: t.starttls === 'opportunistic',
      ignoreTLS: t.starttls === 'off',
      // Certificates are not verified, in either mode: MTA-to-MTA TLS is opportunistic encryption, and MX
      // hosts commonly present self-signed or mismatched certificates (RFC 7435; verification would need
      // MTA-STS or DANE, which this MTA does not implement).
      tls: { rejectUnauthorized: false },
      // Relays may live on a private network or on this machine.
      allowInternalNetworkInterfaces: true,
      logger: false,
    });
    let resolveEnded!: () => void;
    const session: Session = { conn, messages: 0, dead: false, discarded: false, ended: new Promise<void>((r) => (resolveEnded = r)) };
    this.sessions.add(session);
    this.health.count(this.hostKey, 1);
    conn.on('error', (err: SmtpError) => {
      session.dead = true;
      this.opts.log.debug({ host: t.servername ?? t.host, port: t.port, code: err.code, err: err.message }, 'smtp session error');
    });
    conn.on('end', () => {
      session.dead = true;
      resolveEnded();
      if (this.idle.includes(session)) this.discard(session);
    });

    try {
      await new Promise<void>((resolve, reject) => {
        const onEnd = () => reject(smtpError('Connection closed before the session was ready', 'ECONNECTION'));
        conn.once('error', reject);
        conn.once('end', onEnd);
        conn.connect((err) => {
          conn.off('error', reject);
          conn.off('end', onEnd);
          if (err) reject(err);
          else resolve();
        });
      });
      if (t.starttls === 'required' && !conn.secure) {
        throw smtpError('TLS is required but the server does not offer STARTTLS', ENOSTARTTLS);
      }
      if (t.auth) {
        // Without AUTH in EHLO (e.g. offered only after STARTTLS) a relay would refuse the message as
        // unauthenticated: a configuration problem, reported as such rather than as the relay's 5xx.
        if (!conn.allowsAuth) throw smtpError('The relay does not offer AUTH on this session', ENOAUTH);
        const auth = t.auth;
        await new Promise<void>((resolve, reject) => conn.login({ user: auth.user, pass: auth.pass }, (err) => (err ? reject(err) : resolve())));
      }
      this.health.reachable(this.hostKey);
      return session;
    } catch (err) {
      this.discard(session, !session.dead);
      // A handshake that fails surfaces as a socket error; the caller needs to know it was TLS.
      const e = err as SmtpError;
      if (conn.upgrading && e.code !== 'ETLS') {
        e.originalCode ??= e.code;
        e.code = 'ETLS';
      }
      // With other sessions to it open (in any pool), the host is up (a limit on connections, say): only this one failed.
      if (isUnreachable(e) && this.health.sessions(this.hostKey) === 0) {
        this.health.unreachable(this.hostKey, e);
        // The deliveries waiting for a session here would each wait out a connection of their own: they fail now.
        while (this.waiters.length) this.wakeOne();
      } else {
        this.health.reachable(this.hostKey);
      }
      throw e;
    }
  }

  private transact(session: Session, envelope: SmtpEnvelope, raw: Buffer): Promise<{ result: SendResult; bodyStarted: boolean }> {
    const { conn } = session;
    // The message as nodemailer takes a stream (it calls `pipe` once the server has accepted DATA), without a
    // stream: the bytes go straight into its dot-stuffing stream, and `bodyStarted` says whether they went.
    let bodyStarted = false;
    const body = {
      pipe<T extends NodeJS.WritableStream>(dest: T): T {
        bodyStarted = true;
        dest.end(raw);
        return dest;
      },
    };
    session.messages++;
    return new Promise((resolve) => {
      let settled = false;
      const finish = (result: SendResult, next: 'keep' | 'reset' | 'drop') => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve({ result, bodyStarted });
        this.release(session, next);
      };
      const deadline = setTimeout(() => {
        const err = smtpError(`The SMTP transaction took longer than ${(this.opts.timeoutMs * TRANSACTION_TIMEOUT_FACTOR) / 1000} s`, EDEADLINE);
        finish({ ok: false, stage: 'transaction', secure: conn.secure, error: err }, 'drop');
      }, this.opts.timeoutMs * TRANSACTION_TIMEOUT_FACTOR);
      deadline.unref();
      // RFC 6531 §3.4: a transaction with a non-ASCII address must carry the SMTPUTF8 parameter, which a server
      // that does not offer the extension cannot be sent; nodemailer would send the address anyway, without
      // it (Postfix's own client refuses: "SMTPUTF8 is required, but was not offered by host"). Those
      // recipients are left out of the transaction, each with an ESMTPUTF8 error; the others go as usual.
      const unsupported = offersSmtpUtf8(conn) ? [] : envelope.to.filter(needsSmtpUtf8);
      const left: SmtpError[] = unsupported.map((recipient) =>
        Object.assign(smtpError(`The server does not offer SMTPUTF8, which the address ${recipient} needs`, ESMTPUTF8), { recipient }),
      );
      const to = unsupported.length ? envelope.to.filter((r) => !needsSmtpUtf8(r)) : envelope.to;
      if (to.length === 0) {
        const err = Object.assign(smtpError('The server does not offer SMTPUTF8, which every recipient needs', ESMTPUTF8), { rejectedErrors: left });
        finish({ ok: false, stage: 'transaction', secure: conn.secure, error: err }, 'keep');
        return;
      }
      // BODY=8BITMIME is declared when the server supports it: harmless for 7-bit content (RFC 6152).
      conn.send({ from: envelope.from, to, size: raw.length, use8BitMime: true }, body as unknown as Readable, (err, info) => {
        if (err) {
          if (err.rejectedErrors) err.rejectedErrors.push(...left);
          // The server refused the message but the session is fine: RSET and keep it.
          const refused = (err.code === 'EENVELOPE' || err.code === 'EMESSAGE') && err.responseCode !== 421;
          finish({ ok: false, stage: 'transaction', secure: conn.secure, error: err }, refused ? 'reset' : 'drop');
          return;
        }
        finish({ ok: true, secure: conn.secure, accepted: info.accepted, rejected: [...(info.rejectedErrors ?? []), ...left], response: info.response }, 'keep');
      });
    });
  }

  private release(session: Session, next: 'keep' | 'reset' | 'drop'): void {
    if (session.dead || this.closed || next === 'drop' || session.messages >= this.opts.maxMessages) {
      this.discard(session, !session.dead && next !== 'drop');
      return;
    }
    if (next === 'reset') {
      session.conn.reset((err) => (err ? this.discard(session) : this.makeIdle(session)));
      return;
    }
    this.makeIdle(session);
  }

  private makeIdle(session: Session): void {
    if (session.dead || this.closed || this.ownerClosed()) return this.discard(session, !session.dead);
    this.idle.push(session);
    session.idleTimer = setTimeout(() => this.discard(session, true), this.opts.idleMs);
    session.idleTimer.unref();
    this.wakeOne();
  }

  /** Takes a session out of the pool: QUIT when it is healthy (`polite`), else drop the socket. */
  private discard(session: Session, polite = false): void {
    if (session.discarded) return;
    session.discarded = true;
    clearTimeout(session.idleTimer);
    const i = this.idle.indexOf(session);
    if (i >= 0) this.idle.splice(i, 1);
    if (this.sessions.delete(session)) this.health.count(this.hostKey, -1);
    if (polite && !session.dead) {
      session.conn.quit();
      const force = setTimeout(() => session.conn.close(), QUIT_GRACE_MS);
      force.unref();
      void session.ended.then(() => clearTimeout(force));
    } else {
      session.conn.close();
    }
    this.wakeOne();
    this.forgetIfUnused();
  }

  private forgetIfUnused(): void {
    if (this.sessions.size === 0 && this.inFlight === 0) this.onEmpty();
  }

  async close(): Promise<void> {
    this.closed = true;
    const sessions = [...this.sessions];
    for (const s of [...this.idle]) this.discard(s, true);
    // Waiters wake up, see the pool closed and fail; busy sessions are discarded when released.
    while (this.waiters.length) this.wakeOne();
    await Promise.all(sessions.map((s) => s.ended));
  }
}

export function createTransportPool(options: TransportPoolOptions): TransportPool {
  const opts: Required<TransportPoolOptions> = { idleMs: DEFAULT_IDLE_MS, maxMessages: DEFAULT_MAX_MESSAGES, now: Date.now, ...options };
  const pools = new Map<string, DestinationPool>();
  const health = new HostHealth(opts.now);
  let closed = false;

  const keyOf = (t: SmtpTarget) =>
    JSON.stringify([t.host, t.port, t.servername ?? '', t.implicitTls, t.starttls, t.auth?.user ?? '', t.auth?.pass ?? '', t.localAddress ?? '', t.helo ?? '']);

  return {
    async send(target, envelope, raw) {
      if (closed) return { ok: false, stage: 'connect', secure: false, error: smtpError('The SMTP connection pool is closed', ECLOSED) };
      const key = keyOf(target);
      let pool = pools.get(key);
      if (!pool) {
        const created: DestinationPool = new DestinationPool(
          target,
          opts,
          () => {
            if (pools.get(key) === created) pools.delete(key);
          },
          () => closed,
          health,
        );
        pool = created;
        pools.set(key, pool);
      }
      return pool.send(envelope, raw);
    },
    async close() {
      closed = true;
      const all = [...pools.values()];
      pools.clear();
      await Promise.all(all.map((p) => p.close()));
    },
  };
}
