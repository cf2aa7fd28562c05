// The MX listener (MAIL_MX_PORT): smtp-server hooks as thin adapters over the inbound services.
//   connect   per-IP and overall connection caps (421 4.7.0); from 80% of the overall cap, stress: short
//             timeouts, fewer errors and sessions per address tolerated (./listener-guard.ts)
//   MAIL      any sender, the null reverse path included; a declared SIZE over the advertised one is 552 5.3.4
//   RCPT      services/inbound/routing.ts decides; unknown user 550 5.1.1, a domain we do not serve
//             550 5.7.1 (no relaying), more than MAX_RECIPIENTS 452 4.5.3
//   DATA      read up to the size limit (552 5.3.4 past it, RFC 1870 §6.1) and the memory budget of all
//             sessions (452 4.3.1 past it); reports addressed to us parsed here (pure
//             codecs in ./reports/); services/inbound/receiver.ts authenticates and stores; 250 only after it
//             committed; DMARC reject 550 5.7.1 (451 4.7.0 when a DNS look-up of the check went unanswered);
//             anything unexpected 451 4.3.0 (the sender retries).
//   greeting after MAIL_MX_GREET_PAUSE_MS (a client that talks first is refused 421), at once for clients on
//             MAIL_TRUSTED_NETWORKS and for those that waited it out in the last day (./greet-pause.ts)
// STARTTLS with the box's certificate; no AUTH on the MX. Nothing a client sends can throw out of a hook.
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { AppContext } from '../context.js';
import type { TlsMaterial } from '../core/key-material.js';
import type { MailStore } from '../mailstore/types.js';
import { asciiDomainAddress } from '../core/address.js';
import { ByteBudget, capConnections, ConnectionCaps, readBudgeted, refuseWith } from '../core/listener-limits.js';
import { NetworkList } from '../core/trusted-networks.js';
import { trackSessions } from '../core/metrics.js';
import { controlGreeting, mxGreetPolicy, PassedClients } from './greet-pause.js';
import { guardListener, SIZE_EXCEEDED, STRESS_IDLE_TIMEOUT_MS } from './listener-guard.js';
import { routeRecipient, type RecipientRoute, type InboundReceiver, type Notices, MailboxFullError } from '../services/inbound/index.js';
import { isFeedbackReport, parseComplaint } from './reports/arf.js';
import { parseAggregateReport } from './reports/dmarc-aggregate.js';
import { parseBounce } from './reports/dsn.js';
import { parseMime, type MimePart } from './reports/mime.js';

/** The listener's limits, each a named figure (docs/MAIL.md "Inbound mail"). */
export const MX_LIMITS = {
  /** Largest message accepted (bytes of DATA): the same 36 MB as the API's body cap. */
  maxMessageBytes: 36 * 1024 * 1024,
  /** Recipients per message (RFC 5321 §4.5.3.1.8 asks for at least 100). */
  maxRecipients: 100,
  /** Sessions at once, all clients together. */
  maxConnections: 500,
  /** Sessions at once from one client address (an IPv6 /64), counted from the TCP accept. */
  maxConnectionsPerIp: 50,
  /**
   * Message data held in memory at once by the sessions in DATA, all clients together and per client address (an
   * IPv6 /64). A message would pass it: its data is dropped as it arrives and the end of DATA answers 452 4.3.1
   * (the sender retries later). Without it 40 sessions from one address held 1.7 GB of RSS with unfinished DATA.
   * Seven messages of the largest size at once; per client, two.
   */
  maxBufferedBytes: 256 * 1024 * 1024,
  maxBufferedBytesPerClient: 80 * 1024 * 1024,
  /** Idle time before a silent session is dropped (RFC 5321 §4.5.3.2.7 suggests 5 minutes). */
  idleTimeoutMs: 5 * 60 * 1000,
  /** The same under stress (80% of maxConnections open, until below 60%): Postfix's 10 s. */
  stressIdleTimeoutMs: STRESS_IDLE_TIMEOUT_MS,
  /** How long a stop waits for sessions to finish before closing them. */
  closeTimeoutMs: 2000,
};

export type MxLimits = typeof MX_LIMITS;

/** Replies, in one table (code + enhanced status + text). */
export const MX_REPLIES = {
  tooManyConnections: { code: 421, text: '4.7.0 Too many connections from your address, try again later' },
  unknownUser: { code: 550, text: '5.1.1 No such user here' },
  relayDenied: { code: 550, text: '5.7.1 Relaying denied: this server does not accept mail for that domain' },
  tooManyRecipients: { code: 452, text: '4.5.3 Too many recipients' },
  mailboxFull: { code: 452, text: '4.2.2 Mailbox full, try again later' },
  tooBig: { code: SIZE_EXCEEDED.code, text: `${SIZE_EXCEEDED.enhanced} ${SIZE_EXCEEDED.text}` },
  noRoom: { code: 452, text: '4.3.1 Insufficient system storage, try again later' },
  noRecipients: { code: 503, text: '5.5.1 No valid recipients' },
  dmarcReject: { code: 550, text: '5.7.1' },
  dmarcUnsure: { code: 451, text: '4.7.0' },
  temporary: { code: 451, text: '4.3.0 Temporary local problem, please try again later' },
  lookupFailed: { code: 451, text: '4.3.0 Temporary failure looking up the recipient, please try again later' },
} as const;

const smtpError = (reply: { code: number; text: string }, extra = '') => Object.assign(new Error(extra ? `${reply.text} ${extra}` : reply.text), { responseCode: reply.code });

export interface MxListener {
  address: AddressInfo;
  close(): Promise<void>;
}

export interface MxOptions {
  tls: TlsMaterial;
  receiver: InboundReceiver;
  store: MailStore | null;
  limits?: Partial<MxLimits>;
}

const isOurs = (address: string) => /^(bounces\+|mailer-daemon@|postmaster@)/i.test(address);

/** Reports addressed to our own addresses, parsed before the message is stored (bad input: no notice). */
export function readNotices(raw: Buffer, routes: RecipientRoute[]): Notices {
  const notices: Notices = {};
  const wantsFeedback = routes.some((r) => r.kind === 'feedback' || (r.kind === 'webhook' && r.feedbackLoop));
  const wantsDmarc = routes.some((r) => r.kind === 'dmarc');
  if (!wantsFeedback && !wantsDmarc) return notices;
  let root: MimePart;
  try {
    root = parseMime(raw);
  } catch {
    return wantsDmarc ? { dmarc: { error: 'the message could not be parsed' } } : notices;
  }
  if (wantsFeedback) {
    try {
      if (isFeedbackReport(root)) notices.complaint = parseComplaint(root);
      else notices.bounce = parseBounce(root, isOurs);
    } catch {
      notices.bounce = null;
    }
  }
  if (wantsDmarc) {
    try {
      notices.dmarc = parseAggregateReport(root);
    } catch (err) {
      notices.dmarc = { error: (err as Error).message };
    }
  }
  return notices;
}

export async function startMxListener(ctx: AppContext, opts: MxOptions): Promise<MxListener> {
  const limits = { ...MX_LIMITS, ...opts.limits };
  const log = ctx.log.child({ component: 'mx' });
  const routes = new WeakMap<SMTPServerAddress, RecipientRoute>();
  const inFlight = new Set<Promise<unknown>>();

  const buffered = new ByteBudget(limits.maxBufferedBytes, limits.maxBufferedBytesPerClient);

  async function handleData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const message = await readBudgeted(stream, buffered, session.remoteAddress, limits.maxMessageBytes);
    try {
      return await acceptMessage(message.raw, message.tooBig, message.noRoom, session);
    } finally {
      buffered.release(session.remoteAddress, message.reserved);
    }
  }

  async function acceptMessage(raw: Buffer, tooBig: boolean, noRoom: boolean, session: SMTPServerSession): Promise<string> {
    if (tooBig) throw smtpError(MX_REPLIES.tooBig);
    if (noRoom) throw smtpError(MX_REPLIES.noRoom);
    const accepted: RecipientRoute[] = [];
    for (const a of session.envelope.rcptTo) {
      const route = routes.get(a) ?? (await routeRecipient(ctx, opts.store, asciiDomainAddress(a.address)));
      if ('address' in route) accepted.push(route);
    }
    if (accepted.length === 0) throw smtpError(MX_REPLIES.noRecipients);
    const mailFrom = session.envelope.mailFrom ? asciiDomainAddress(session.envelope.mailFrom.address) : '';
    const result = await opts.receiver.receive({
      raw,
      mailFrom,
      routes: accepted,
      client: { ip: session.remoteAddress, helo: session.hostNameAppearsAs || '', tls: Boolean(session.secure), smtpUtf8: Boolean((session.envelope as { smtpUtf8?: boolean }).smtpUtf8) },
      notices: readNotices(raw, accepted),
    });
    if (result.status === 'refused') throw smtpError(MX_REPLIES.dmarcReject, result.message);
    if (result.status === 'deferred') throw smtpError(MX_REPLIES.dmarcUnsure, result.message);
    return `2.0.0 Ok: queued as ${result.queueId}`;
  }

  const server = new SMTPServer({
    name: ctx.config.hostname,
    secure: false,
    key: opts.tls.key,
    cert: opts.tls.cert,
    // EHLO advertises SIZE with its figure (RFC 1870); a larger declared SIZE is answered by guardListener.
    size: limits.maxMessageBytes,
    authOptional: true,
    disabledCommands: ['AUTH'],
    maxClients: limits.maxConnections,
    socketTimeout: limits.idleTimeoutMs,
    closeTimeout: limits.closeTimeoutMs,
    disableReverseLookup: true,
    // TCP_NODELAY from the accept (smtp-server sets it too, once the session starts): a reply is one write.
    noDelay: true,
    logger: false,
    onRcptTo(address, session, callback) {
      if (session.envelope.rcptTo.length >= limits.maxRecipients) return callback(smtpError(MX_REPLIES.tooManyRecipients));
      // smtp-server hands over the domain in Unicode (it decodes an xn-- name); the box keeps names in ASCII.
      routeRecipient(ctx, opts.store, asciiDomainAddress(address.address)).then(
        (route) => {
          if (route.kind === 'not_local') return callback(smtpError(MX_REPLIES.relayDenied));
          if (route.kind === 'unknown_user') return callback(smtpError(MX_REPLIES.unknownUser));
          if (route.kind === 'mailbox_full') return callback(smtpError(MX_REPLIES.mailboxFull));
          routes.set(address, route);
          callback();
        },
        (err: unknown) => {
          log.error({ err }, 'recipient look-up failed');
          callback(smtpError(MX_REPLIES.lookupFailed));
        },
      );
    },
    onData(stream, session, callback) {
      const work = handleData(stream, session).then(
        (reply) => {
          ctx.metrics.smtpMessages.inc({ listener: 'mx' });
          callback(null, reply);
        },
        (err: unknown) => {
          if (err instanceof Error && 'responseCode' in err) return callback(err);
          if (err instanceof MailboxFullError) return callback(smtpError(MX_REPLIES.mailboxFull));
          log.error({ err }, 'a message could not be stored');
          callback(smtpError(MX_REPLIES.temporary));
        },
      );
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    },
  });
  const gauge = guardListener(server, { log, listener: 'mx', capacity: limits.maxConnections, idleTimeoutMs: limits.idleTimeoutMs, stressIdleTimeoutMs: limits.stressIdleTimeoutMs, maxMessageBytes: limits.maxMessageBytes });
  controlGreeting(server, mxGreetPolicy(ctx.config.mxGreetPauseMs, new NetworkList(ctx.config.trustedNetworks), new PassedClients(ctx.clock)), log);
  // smtp-server's maxClients caps the total; this cap is per client address (an IPv6 /64), from the TCP accept.
  const { code, text } = MX_REPLIES.tooManyConnections;
  capConnections(server.server, new ConnectionCaps({ total: Number.POSITIVE_INFINITY, perClient: limits.maxConnectionsPerIp }), refuseWith(`${code} ${text}\r\n`), gauge);
  trackSessions(server.server, ctx.metrics, 'mx');

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(ctx.config.mxPort, ctx.config.bind, () => {
      server.server.removeListener('error', reject);
      resolve();
    });
  });
  const address = server.server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  return {
    address,
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await Promise.allSettled([...inFlight]);
      })()),
  };
}
