// Whether a domain takes mail, as the MTA would find out (mta/mx.ts: its MX hosts, else its address records; a
// null MX, RFC 7505, refuses all mail), through the box's one resolver, each domain's answer kept a short while.
// A batch of 1,000 addresses at 20 domains asks the DNS about 20 domains; the same domains asked again within
// a minute, by any request, not at all. Answers are timed on the context's clock; failures are not kept.
import { approxBytes } from '../../core/byte-size.js';
import type { AppContext } from '../../context.js';
import type { Clock } from '../../core/clock.js';
import type { DnsResolver } from '../../dns/resolver.js';
import { resolveDestination } from '../../mta/mx.js';

/**
 * found: MX records; implicit: no MX, the domain's own A/AAAA records take mail (RFC 5321 §5.1); null_mx: the
 * domain says it takes no mail (RFC 7505); no_records: the domain does not exist (NXDOMAIN) or has neither MX
 * nor address records; lookup_failed: the DNS did not answer (SERVFAIL, timeout): nothing is known;
 * not_checked: the address was not valid, so no domain was asked about.
 */
export const MX_STATUSES = ['found', 'implicit', 'null_mx', 'no_records', 'lookup_failed', 'not_checked'] as const;
export type MxStatus = (typeof MX_STATUSES)[number];

export interface MailRoute {
  status: MxStatus;
  /** The hosts that take the domain's mail, by preference (the implicit MX is the domain itself, priority 0). */
  records: Array<{ exchange: string; priority: number }>;
  /** What the DNS said, when mail cannot go (or it is not known whether it can). */
  message: string | null;
}

/** How long a domain's answer is kept: "briefly across requests". */
export const ROUTE_TTL_MS = 60_000;
/** Domains remembered at most (past it, expired ones are swept, or all forgotten)… */
export const MAX_ROUTES = 10_000;
/** …and bytes (an answer is ~100–500 bytes; a domain with a huge MX set, over an eighth of this, is not kept). */
export const MAX_ROUTE_BYTES = 4 * 1024 * 1024;
/** Look-ups in flight at once for one batch: 1,000 distinct domains do not become 1,000 queries at once. */
export const LOOKUP_CONCURRENCY = 32;

export const NOT_CHECKED: MailRoute = { status: 'not_checked', records: [], message: null };

async function lookUp(dns: DnsResolver, domain: string): Promise<MailRoute> {
  const d = await resolveDestination(dns, domain);
  if (d.ok) {
    const records = d.hosts.map((h) => ({ exchange: h.host, priority: h.priority }));
    // resolveDestination shuffles equal preferences for delivery; an answer reads better in a fixed order.
    records.sort((a, b) => a.priority - b.priority || a.exchange.localeCompare(b.exchange));
    return { status: d.implicit ? 'implicit' : 'found', records, message: null };
  }
  // resolveDestination's RFC 3463 codes: 5.1.10 null MX, 4.4.4 no MX nor address records, 4.4.3 look-up failed.
  const status: MxStatus = d.enhanced === '5.1.10' ? 'null_mx' : d.enhanced === '4.4.4' ? 'no_records' : 'lookup_failed';
  return { status, records: [], message: d.reason };
}

class MailRouteCache {
  private readonly answers = new Map<string, { route: MailRoute; expires: number; bytes: number }>();
  private readonly pending = new Map<string, Promise<MailRoute>>();
  private held = 0;

  constructor(
    private readonly dns: DnsResolver,
    private readonly clock: Clock,
  ) {}

  /** The remembered answer, if still fresh. */
  cached(domain: string): MailRoute | undefined {
    const hit = this.answers.get(domain);
    if (!hit) return undefined;
    if (hit.expires > this.clock.now().getTime()) return hit.route;
    this.forget(domain);
    return undefined;
  }

  private forget(domain: string): void {
    const old = this.answers.get(domain);
    if (!old) return;
    this.answers.delete(domain);
    this.held -= old.bytes;
  }

  /** One look-up per domain at a time, whoever asks. */
  route(domain: string): Promise<MailRoute> {
    const hit = this.cached(domain);
    if (hit) return Promise.resolve(hit);
    let p = this.pending.get(domain);
    if (!p) {
      p = lookUp(this.dns, domain).finally(() => this.pending.delete(domain));
      void p.then((route) => this.remember(domain, route), () => undefined);
      this.pending.set(domain, p);
    }
    return p;
  }

  private remember(domain: string, route: MailRoute): void {
    if (route.status === 'lookup_failed') return; // the next request asks again
    const now = this.clock.now().getTime();
    this.forget(domain);
    const bytes = approxBytes([domain, route], MAX_ROUTE_BYTES / 8 + 1);
    if (bytes > MAX_ROUTE_BYTES / 8) return;
    if (this.answers.size >= MAX_ROUTES || this.held + bytes > MAX_ROUTE_BYTES) {
      for (const [k, v] of this.answers) if (v.expires <= now) this.forget(k);
      if (this.answers.size >= MAX_ROUTES || this.held + bytes > MAX_ROUTE_BYTES) {
        this.answers.clear();
        this.held = 0;
      }
    }
    this.answers.set(domain, { route, expires: now + ROUTE_TTL_MS, bytes });
    this.held += bytes;
  }
}

// One cache per context (a test's appliance has its own, with its own clock and resolver).
const caches = new WeakMap<AppContext, MailRouteCache>();

/**
 * How long one request waits for its look-ups, in look-up timeouts (`MAIL_DNS_TIMEOUT_MS`): the resolver gives
 * one domain up after two tries, so a lone dead domain is answered by the resolver's own timeout; a batch of a
 * thousand dead ones waits no longer (the look-ups still in flight then go on, and their answers are kept).
 */
export const DEADLINE_TIMEOUTS = 3;

/**
 * Where mail for each of `domains` (ASCII, lower case) goes, by domain. Remembered answers are used as they
 * are; the rest are looked up, at most `LOOKUP_CONCURRENCY` at a time, until `deadlineMs` (real time: the
 * network's, not the context's clock): what is not answered by then is `lookup_failed`.
 */
export async function mailRoutes(ctx: AppContext, domains: Iterable<string>, deadlineMs = DEADLINE_TIMEOUTS * ctx.config.dnsTimeoutMs): Promise<Map<string, MailRoute>> {
  let cache = caches.get(ctx);
  if (!cache) caches.set(ctx, (cache = new MailRouteCache(ctx.dns, ctx.clock)));
  const out = new Map<string, MailRoute>();
  const wanted = new Set<string>();
  for (const domain of domains) {
    if (out.has(domain)) continue;
    const hit = cache.cached(domain);
    if (hit) out.set(domain, hit);
    else wanted.add(domain);
  }
  if (wanted.size === 0) return out;
  const missing = [...wanted];
  let next = 0;
  let late = false;
  const worker = async () => {
    while (next < missing.length && !late) {
      const domain = missing[next++]!;
      const route = await cache.route(domain);
      if (!late) out.set(domain, route);
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, deadlineMs)));
  await Promise.race([Promise.all(Array.from({ length: Math.min(LOOKUP_CONCURRENCY, missing.length) }, worker)), deadline]);
  clearTimeout(timer);
  late = true;
  for (const domain of missing) {
    if (!out.has(domain)) out.set(domain, { status: 'lookup_failed', records: [], message: `${domain}: no answer from the DNS within ${deadlineMs} ms` });
  }
  return out;
}
