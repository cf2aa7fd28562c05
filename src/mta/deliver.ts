// The outbound MTA: one SMTP transaction per (message, destination domain), over the route the operator's
// rules choose, with the sending domain's TLS mode; an outcome per recipient. Pure machinery: no database,
// no email statuses, no queue (retries are the caller's job queue). Remote trouble never throws.
import { isIP } from 'node:net';
import type { Config, DnsServer, RouteRule } from '../config.js';
import type { Logger } from '../core/logger.js';
import { DnsLookupError, type DnsResolver } from '../dns/resolver.js';
import { classifyBounce, type BounceCategory } from './bounce.js';
import { sharedLookups } from './dns-cache.js';
import { resolveDestination, type Destination, type MxHost } from './mx.js';
import { deliveredOutcome, isRecipientLimit, localOutcome, parseReply, refusedOutcome, replyOf, transientCode } from './outcomes.js';
import { chooseRoute, needsMxHosts, parseRelayUrl, type RelayTarget } from './routes.js';
import { createTransportPool, ENOAUTH, ENOSTARTTLS, ESMTPUTF8, isSuspended, type SendResult, type SmtpError, type SmtpTarget, type StartTlsPolicy } from './transport-pool.js';
import type { DeliveryRequest, DeliveryResult, Mta, RecipientOutcome, RouteTaken, TlsMode } from './types.js';

export interface MtaOptions {
  dns: DnsResolver;
  /** EHLO name. */
  hostname: string;
  /** Port of the remote MX hosts (25 in production). */
  outboundPort: number;
  /** Global smarthost, used when no route rule matches; null: direct. */
  relayUrl: string | null;
  routes: RouteRule[];
  /** SMTP sessions kept per destination address (or relay). */
  connectionsPerHost: number;
  /** Connect, greeting and inactivity timeout. */
  smtpTimeoutMs: number;
  log: Logger;
  /**
   * How long MX and address answers are reused (default 0: concurrent look-ups of a name share one query,
   * nothing is kept). Failed look-ups are never kept.
   */
  dnsCacheMs?: number;
  /** Clock for dnsCacheMs and for how long an unreachable host is suspended (default Date.now). */
  now?: () => number;
}

/**
 * What an MTA is built from that the config decides: plain data, so that a render thread receives it in its
 * workerData. `resolver` is for an MTA that makes its own resolver (a render thread's); the main thread's
 * MTA uses the context's, which is made from the same settings.
 */
export type MtaSettings = Omit<MtaOptions, 'dns' | 'log' | 'now'> & {
  resolver: { servers: DnsServer[]; timeoutMs: number };
};

/** How long MX and address answers are reused by an MTA made from the config. */
const CONFIG_DNS_CACHE_MS = 30_000;

/** The one place the config becomes MTA options: `createMta({ ...mtaOptions(config), dns, log, now })`. */
export function mtaOptions(config: Config): MtaSettings {
  return {
    hostname: config.hostname,
    outboundPort: config.outboundPort,
    relayUrl: config.relayUrl,
    routes: config.routes,
    connectionsPerHost: config.connectionsPerHost,
    smtpTimeoutMs: config.smtpTimeoutMs,
    dnsCacheMs: CONFIG_DNS_CACHE_MS,
    resolver: { servers: config.dnsServers, timeoutMs: config.dnsTimeoutMs },
  };
}

/**
 * Addresses tried per delivery across all MX hosts (Postfix's smtp_mx_address_limit is 5): a domain with
 * many unreachable hosts costs at most this many connection timeouts.
 */
const MAX_ADDRESSES_PER_DELIVERY = 5;

/** RFC 3463 codes for what we find ourselves. */
const CODE = {
  noAnswer: '4.4.1', // connection refused, timed out, no greeting
  connectionLost: '4.4.2', // the session broke during the transaction
  dnsTemporary: '4.4.3',
  tlsFailed: '4.7.5', // cryptographic failure: the TLS handshake did not complete
  tlsUnavailable: '4.7.10', // encryption needed but the server does not offer it
  tooBig: '5.3.4',
  smtpUtf8Unsupported: '5.6.7', // RFC 6531 §3.5 / RFC 3463 registry: non-ASCII addresses not permitted
} as const;

/** A dedicated address: its own pool (the pool key includes it), bound as the source, greeting with its name. */
const sourceOf = (req: DeliveryRequest): Pick<SmtpTarget, 'localAddress' | 'helo'> => (req.source ? { localAddress: req.source.address, helo: req.source.helo } : {});

const starttlsFor = (mode: TlsMode): StartTlsPolicy => (mode === 'enforced' ? 'required' : 'opportunistic');

export function createMta(opts: MtaOptions): Mta {
  // The config validated these; a bad one here is a programming error, reported at start-up.
  if (opts.relayUrl) parseRelayUrl(opts.relayUrl);
  for (const rule of opts.routes) if (rule.relay) parseRelayUrl(rule.relay);

  const dns = sharedLookups(opts.dns, opts.dnsCacheMs ?? 0, opts.now ?? Date.now);
  const pool = createTransportPool({
    hostname: opts.hostname,
    timeoutMs: opts.smtpTimeoutMs,
    connectionsPerHost: opts.connectionsPerHost,
    log: opts.log,
    ...(opts.now ? { now: opts.now } : {}),
  });

  async function deliver(req: DeliveryRequest): Promise<DeliveryResult> {
    const domain = req.domain.toLowerCase().replace(/\.$/, '');
    let destination: Destination | undefined;
    let mxHosts: string[] | null = [];
    if (needsMxHosts(opts.routes)) {
      destination = await resolveDestination(dns, domain);
      mxHosts = destination.ok ? destination.hosts.map((h) => h.host) : destination.permanent ? [] : null;
    }
    const choice = chooseRoute(domain, opts.routes, opts.relayUrl, mxHosts);

    let result: DeliveryResult;
    if (req.recipients.length === 0) {
      result = { route: { kind: choice.kind === 'relay' ? 'relay' : 'direct', name: choice.name, tls: false }, outcomes: [] };
    } else if (choice.kind === 'undecided') {
      const reason = destination && !destination.ok ? destination.reason : 'the MX look-up failed';
      const message = `Route rule '${choice.name}' matches on MX hosts, which are unknown for now: ${reason}`;
      result = {
        route: { kind: 'direct', name: choice.name, tls: false },
        outcomes: req.recipients.map((r) => localOutcome(r, 'deferred', message, CODE.dnsTemporary, 'dns_failure')),
      };
    } else if (choice.kind === 'relay') {
      result = await viaRelay(req, choice.name, choice.relay);
    } else {
      result = await direct(req, choice.name, destination ?? (await resolveDestination(dns, domain)));
    }

    const count = (s: string) => result.outcomes.filter((o) => o.status === s).length;
    const { route } = result;
    // Routine success at debug (the caller records every outcome); anything else is worth seeing at info.
    opts.log[count('delivered') === result.outcomes.length ? 'debug' : 'info'](
      {
        domain,
        route: route.name,
        via: route.kind,
        host: route.host,
        port: route.port,
        tls: route.tls,
        delivered: count('delivered'),
        deferred: count('deferred'),
        bounced: count('bounced'),
      },
      'outbound delivery',
    );
    return result;
  }

  /** One session attempt; in opportunistic mode a failed TLS handshake is retried in plaintext. */
  async function attempt(target: SmtpTarget, req: DeliveryRequest): Promise<SendResult> {
    const envelope = { from: req.envelopeFrom, to: [...new Set(req.recipients)] };
    const result = await pool.send(target, envelope, req.raw);
    if (!result.ok && result.stage === 'connect' && result.error.code === 'ETLS' && target.starttls === 'opportunistic') {
      const host = target.servername ?? target.host;
      opts.log.info({ host, port: target.port, err: result.error.message }, 'TLS handshake failed, retrying without STARTTLS');
      return pool.send({ ...target, starttls: 'off' }, envelope, req.raw);
    }
    return result;
  }

  async function direct(req: DeliveryRequest, name: string, destination: Destination): Promise<DeliveryResult> {
    const route: RouteTaken = { kind: 'direct', name, tls: false };
    if (!destination.ok) {
      // A null MX: permanent. No MX and no address records, or a look-up that failed: try later.
      const status = destination.permanent ? 'bounced' : 'deferred';
      return { route, outcomes: req.recipients.map((r) => localOutcome(r, status, destination.reason, destination.enhanced, 'dns_failure')) };
    }

    const failures: string[] = [];
    let lastError: SmtpError | undefined;
    let dnsOnly = true;
    let tried = 0;
    hosts: for (const mx of destination.hosts) {
      const addresses = await addressesOf(mx);
      if (typeof addresses === 'string') {
        failures.push(addresses);
        continue;
      }
      dnsOnly = false;
      for (const address of addresses) {
        // A dedicated source address reaches only addresses of its own family.
        if (req.source && isIP(req.source.address) !== isIP(address)) continue;
        if (tried++ >= MAX_ADDRESSES_PER_DELIVERY) break hosts;
        const target: SmtpTarget = {
          host: address,
          port: opts.outboundPort,
          servername: mx.host,
          implicitTls: false,
          starttls: starttlsFor(req.tlsMode),
          ...sourceOf(req),
        };
        route.host = mx.host;
        route.port = opts.outboundPort;
        const result = await attempt(target, req);
        // The host answered: whatever it said about the message is the outcome (another MX is not asked, it
        // could deliver a second copy of a message this one half-accepted).
        if (result.ok || result.stage === 'transaction') {
          route.tls = result.secure;
          return { route, outcomes: await withRemainder(target, req, result, describeHost(mx.host, address, opts.outboundPort)) };
        }
        failures.push(describeConnectFailure(result.error, mx.host, describeHost(mx.host, address, opts.outboundPort), req.tlsMode));
        lastError = result.error;
      }
    }

    const message = failures.length === 1 ? failures[0]! : `No mail host of ${req.domain} accepted a session: ${failures.join('; ')}`;
    if (dnsOnly) return { route, outcomes: req.recipients.map((r) => localOutcome(r, 'deferred', message, CODE.dnsTemporary, 'dns_failure')) };
    return { route, outcomes: connectFailureOutcomes(req.recipients, message, lastError!) };
  }

  async function viaRelay(req: DeliveryRequest, name: string, relay: RelayTarget): Promise<DeliveryResult> {
    const target: SmtpTarget = {
      host: relay.host,
      port: relay.port,
      servername: isIP(relay.host) ? undefined : relay.host,
      implicitTls: relay.implicitTls,
      starttls: relay.implicitTls ? 'off' : starttlsFor(req.tlsMode),
      auth: relay.auth,
      ...sourceOf(req),
    };
    const route: RouteTaken = { kind: 'relay', name, host: relay.host, port: relay.port, tls: false };
    const where = relay.host.includes(':') ? `[${relay.host}]:${relay.port}` : `${relay.host}:${relay.port}`;
    const result = await attempt(target, req);
    if (result.ok || result.stage === 'transaction') {
      route.tls = result.secure;
      return { route, outcomes: await withRemainder(target, req, result, `relay ${where}`) };
    }
    const message = describeConnectFailure(result.error, `relay ${relay.host}`, `relay ${where}`, req.tlsMode);
    return { route, outcomes: connectFailureOutcomes(req.recipients, message, result.error) };
  }

  /**
   * The outcomes of a transaction, and of the ones that follow it at once on the same host for the recipients
   * it refused only because its limit of recipients per transaction was reached (RFC 5321 §4.5.3.1.8 and
   * §4.5.3.1.10; Postfix's smtpd_recipient_limit answers "452 4.5.3 Error: too many recipients"): they are
   * not deferred for minutes behind the job queue's backoff. Each transaction must deliver to someone, or
   * the rest waits for the next attempt.
   */
  async function withRemainder(target: SmtpTarget, req: DeliveryRequest, first: SendResult, where: string): Promise<RecipientOutcome[]> {
    const outcomes = new Map<string, RecipientOutcome>();
    let recipients = req.recipients;
    let result = first;
    for (;;) {
      for (const o of transactionOutcomes(recipients, result, where)) outcomes.set(o.recipient, o);
      if (!result.ok || result.accepted.length === 0) break;
      const rest = new Set<string>();
      for (const e of result.rejected) {
        const reply = replyOf(e);
        if (e.recipient && reply && isRecipientLimit(reply)) rest.add(e.recipient);
      }
      if (rest.size === 0) break;
      recipients = recipients.filter((r) => rest.has(r));
      result = await attempt(target, { ...req, recipients });
      // No session this time (the host went away): the refused recipients keep their deferral.
      if (!result.ok && result.stage === 'connect') break;
    }
    return req.recipients.map((r) => outcomes.get(r)!);
  }

  /** The MX host's addresses through the box's resolver, IPv4 first, or why there are none. */
  async function addressesOf(mx: MxHost): Promise<string[] | string> {
    if (isIP(mx.host)) return [mx.host];
    const lookups = await Promise.allSettled([dns.a(mx.host), dns.aaaa(mx.host)]);
    const addresses: string[] = [];
    let failed: DnsLookupError | undefined;
    for (const l of lookups) {
      if (l.status === 'fulfilled') addresses.push(...l.value);
      else if (l.reason instanceof DnsLookupError) failed = l.reason;
      else throw l.reason;
    }
    // IPv4 first: sending over IPv6 needs its own reverse DNS and SPF coverage, which many boxes lack.
    if (addresses.length > 0) return addresses;
    return failed ? `${mx.host}: ${failed.message}` : `${mx.host} has no address records`;
  }

  return {
    deliver,
    close: () => pool.close(),
  };
}

const describeHost = (name: string, address: string, port: number) =>
  name === address ? `${address}:${port}` : `${name}[${address}]:${port}`;

/** Why a session could not be set up, in words an operator can act on. `host` names the server, `where` adds address and port. */
function describeConnectFailure(err: SmtpError, host: string, where: string, tlsMode: TlsMode): string {
  if (isSuspended(err)) return `Delivery temporarily suspended: ${describeConnectFailure(err.suspendedBy, host, where, tlsMode)}`;
  const reply = replyOf(err);
  switch (err.code) {
    case ENOSTARTTLS:
      return `TLS required by the domain's tls_mode but ${host} does not offer STARTTLS`;
    case 'ETLS':
      if (reply) return `TLS required by the domain's tls_mode but ${host} refused STARTTLS: ${reply.message}`;
      return `${tlsMode === 'enforced' ? `TLS required by the domain's tls_mode but the` : 'The'} TLS handshake with ${where} failed: ${tlsReason(err)}`;
    case 'EAUTH':
      return `${where} refused our credentials: ${reply?.message ?? err.message}`;
    case ENOAUTH:
      return `${where} does not offer AUTH, so the configured credentials cannot be used`;
    case 'ETIMEDOUT':
      if (err.timeoutType === 'GREETING_TIMEOUT') return `${where} sent no greeting in time`;
      if (err.timeoutType === 'UPGRADE_TIMEOUT') return `The TLS handshake with ${where} timed out`;
      return `Connection to ${where} timed out`;
    default:
      if (reply) return `${where} refused the session: ${reply.message}`;
      if (err.originalCode === 'ECONNREFUSED' || /ECONNREFUSED/.test(err.message)) return `Connection to ${where} refused`;
      return `Connection to ${where} failed: ${err.message.trim()}`;
  }
}

/** "…:SSL routines:ssl3_read_bytes:sslv3 alert handshake failure:…" → "sslv3 alert handshake failure". */
function tlsReason(err: SmtpError): string {
  return /SSL routines:[^:]*:([^:]+)/.exec(err.message)?.[1] ?? err.message.trim();
}

/**
 * No session could be set up anywhere: every recipient waits for the next attempt. This includes enforced TLS
 * refused (no STARTTLS, STARTTLS refused, handshake failed): deferred rather than bounced, because the remote
 * side can fix it, with a reason that says so; the caller's retry window ends it as failed if it never does.
 */
function connectFailureOutcomes(recipients: string[], message: string, err: SmtpError): RecipientOutcome[] {
  const reply = replyOf(err);
  let code: string = CODE.noAnswer;
  let category: BounceCategory = 'connection_failed';
  if (err.code === ENOSTARTTLS || (err.code === 'ETLS' && reply)) code = CODE.tlsUnavailable;
  else if (err.code === 'ETLS') code = CODE.tlsFailed;
  else if (reply) {
    // The server said why (a 421/554 greeting, a refused AUTH): keep its reason, as a deferral.
    category = classifyBounce(reply);
    code = transientCode(reply.enhanced ?? `${reply.code ? Math.floor(reply.code / 100) : 4}.0.0`);
  }
  return recipients.map((r) => localOutcome(r, 'deferred', message, code, category, reply));
}

/**
 * A recipient the pool did not send because its address needs SMTPUTF8 and the server does not offer it: a
 * bounce, as Postfix gives ("SMTPUTF8 is required, but was not offered by host"); not 'invalid_mailbox', so the
 * address is not suppressed.
 */
function smtpUtf8Outcome(recipient: string, where: string): RecipientOutcome {
  const message = `${where} does not offer SMTPUTF8, which the address ${recipient} needs (RFC 6531)`;
  return localOutcome(recipient, 'bounced', message, CODE.smtpUtf8Unsupported, 'unknown');
}

/** A session was set up and a transaction ran: per-recipient outcomes from what the server answered. */
function transactionOutcomes(recipients: string[], result: SendResult, where: string): RecipientOutcome[] {
  if (result.ok) {
    const accepted = new Set(result.accepted);
    const refused = new Map(result.rejected.map((e) => [e.recipient ?? '', e]));
    const reply = parseReply(result.response);
    return recipients.map((r) => {
      if (accepted.has(r)) return deliveredOutcome(r, reply);
      const err = refused.get(r);
      if (err?.code === ESMTPUTF8) return smtpUtf8Outcome(r, where);
      const refusal = err && replyOf(err);
      if (refusal) return refusedOutcome(r, refusal);
      return localOutcome(r, 'deferred', `${where} did not say whether it accepted this recipient`, CODE.connectionLost, 'unknown');
    });
  }

  const err = result.error;
  // Every recipient refused at RCPT: each has its own reply.
  if (err.rejectedErrors?.length) {
    const refused = new Map(err.rejectedErrors.map((e) => [e.recipient ?? '', e]));
    return recipients.map((r) => {
      const own = refused.get(r);
      if (own?.code === ESMTPUTF8) return smtpUtf8Outcome(r, where);
      const reply = (own && replyOf(own)) ?? replyOf(err);
      return reply ? refusedOutcome(r, reply) : localOutcome(r, 'deferred', err.message, CODE.connectionLost, 'unknown');
    });
  }
  const reply = replyOf(err);
  // MAIL FROM or DATA refused, or a 421 mid-transaction: one reply for everyone.
  if (reply && (err.code === 'EENVELOPE' || err.code === 'EMESSAGE' || (reply.code !== undefined && reply.code >= 400))) {
    const refusedSender = err.command === 'MAIL FROM';
    return recipients.map((r) => refusedOutcome(r, reply, refusedSender));
  }
  // Refused before sending: the server's SIZE limit (RFC 1870) is below the message's size.
  if (err.code === 'EMESSAGE' && /larger than allowed/i.test(err.message)) {
    const message = `${where} does not accept messages this large: ${err.message}`;
    return recipients.map((r) => localOutcome(r, 'bounced', message, CODE.tooBig, 'message_too_large'));
  }
  // The session broke (dropped, timed out, protocol error) mid-transaction. If it broke after the final dot
  // the server may have taken the message: a retry can then deliver a duplicate (RFC 5321 §6.1 accepts this).
  const message = `Connection to ${where} was lost during the SMTP transaction: ${err.message}`;
  return recipients.map((r) => localOutcome(r, 'deferred', message, CODE.connectionLost, 'connection_failed'));
}
