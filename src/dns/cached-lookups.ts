// A short-lived answer cache for the look-ups mailauth makes on inbound mail (SPF, DKIM keys, DMARC
// policies, ARC): a burst of mail from one sender asks the same few names again and again, as a local
// caching resolver would absorb. Answers and "no such record" answers are kept for `ttlMs`; failures
// (timeouts, SERVFAIL) are not kept; identical look-ups in flight share one query. Bounded in entries and in
// bytes (a TXT answer can be tens of KiB): the oldest answers go first; one larger than an eighth of the ceiling
// is not kept.
import { approxBytes } from '../core/byte-size.js';
import { isNoData, type DnsResolver } from './resolver.js';

/** The answers' ceiling in bytes (an SPF/DKIM/DMARC answer is 0.2–2 KiB). */
export const DNS_CACHE_BYTES = 4 * 1024 * 1024;

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

export function cachedLookups(dns: DnsResolver, now: () => number, ttlMs = 30_000, maxEntries = 10_000, maxBytes = DNS_CACHE_BYTES): RawLookup {
  const cache = new Map<string, { until: number; bytes: number; value?: unknown; error?: unknown }>();
  let held = 0;
  const drop = (key: string) => {
    const old = cache.get(key);
    if (!old) return;
    cache.delete(key);
    held -= old.bytes;
  };
  const inFlight = new Map<string, Promise<unknown>>();
  return (name, rrtype) => {
    const key = `${rrtype} ${name.toLowerCase()}`;
    const hit = cache.get(key);
    if (hit && hit.until > now()) return hit.error !== undefined ? Promise.reject(ownError(hit.error)) : Promise.resolve(hit.value);
    let p = inFlight.get(key);
    if (!p) {
      const store = (entry: { value?: unknown; error?: unknown }) => {
        drop(key);
        const bytes = approxBytes([key, entry.value ?? null], maxBytes / 8 + 1) + (entry.error === undefined ? 0 : 256);
        if (bytes > maxBytes / 8) return;
        while (cache.size > 0 && (cache.size >= maxEntries || held + bytes > maxBytes)) drop(cache.keys().next().value!);
        cache.set(key, { until: now() + ttlMs, bytes, ...entry });
        held += bytes;
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
