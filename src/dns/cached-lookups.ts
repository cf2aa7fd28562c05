// A short-lived answer cache for the look-ups mailauth makes on inbound mail (SPF, DKIM keys, DMARC
// policies, ARC): a burst of mail from one sender asks the same few names again and again, as a local
// caching resolver would absorb. Answers and "no such record" answers are kept for `ttlMs`; failures
// (timeouts, SERVFAIL) are not kept; identical look-ups in flight share one query. Bounded in size.
import { isNoData, type DnsResolver } from './resolver.js';

export type RawLookup = (name: string, rrtype: string) => Promise<unknown>;


/**
 * Each caller gets its own copy of an error: mailauth writes its verdict onto the error it is handed
 * (`spfResult`), and one shared by concurrent or cached look-ups carried one message's SPF text into another's.
 */
function ownError(error: unknown): unknown {
  if (!error || typeof error !== 'object') return error;
  const e = error as Error & { spfResult?: object };
  const copy = Object.assign(Object.create(Object.getPrototypeOf(e) as object) as object, e, { message: e.message, stack: e.stack }) as typeof e;
  if (e.spfResult) copy.spfResult = { ...e.spfResult };
  return copy;
}

export function cachedLookups(dns: DnsResolver, now: () => number, ttlMs = 30_000, maxEntries = 10_000): RawLookup {
  const cache = new Map<string, { until: number; value?: unknown; error?: unknown }>();
  const inFlight = new Map<string, Promise<unknown>>();
  return (name, rrtype) => {
    const key = `${rrtype} ${name.toLowerCase()}`;
    const hit = cache.get(key);
    if (hit && hit.until > now()) return hit.error !== undefined ? Promise.reject(ownError(hit.error)) : Promise.resolve(hit.value);
    let p = inFlight.get(key);
    if (!p) {
      const store = (entry: { value?: unknown; error?: unknown }) => {
        if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!);
        cache.set(key, { until: now() + ttlMs, ...entry });
      };
      p = dns.raw(name, rrtype).then(
        (value) => {
          store({ value });
          return value;
        },
        (error: unknown) => {
          if (isNoData(error)) store({ error });
          throw error;
        },
      );
      inFlight.set(key, p);
      void p.catch(() => undefined).finally(() => inFlight.delete(key));
    }
    return p.catch((error: unknown) => {
      throw ownError(error);
    });
  };
}
