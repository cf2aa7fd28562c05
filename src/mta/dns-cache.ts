// The MTA's look-ups (MX, A, AAAA) at delivery rate: concurrent look-ups of one name share one query, and,
// when asked, answers are kept for a short while. Failures (DnsLookupError: SERVFAIL, timeout) are never
// kept, so the next delivery asks again.
import { approxBytes } from '../core/byte-size.js';
import type { DnsResolver } from '../dns/resolver.js';

type Lookup = 'mx' | 'a' | 'aaaa';

/** Answers kept at most (then expired ones are swept, or all dropped)… */
const MAX_ANSWERS = 10_000;
/** …and bytes (an MX or address answer is ~100–500 bytes; one larger than an eighth of this is not kept). */
export const MTA_DNS_CACHE_BYTES = 2 * 1024 * 1024;

/** The look-ups the MTA makes. */
export type MtaDns = Pick<DnsResolver, 'mx' | 'a' | 'aaaa'>;

/**
 * `ttlMs` 0: only concurrent look-ups are shared (an answer is never older than the look-up itself).
 * `now` is the clock the TTL is measured on.
 */
export function sharedLookups(dns: DnsResolver, ttlMs: number, now: () => number): MtaDns {
  const pending = new Map<string, Promise<unknown>>();
  const answers = new Map<string, { value: unknown; expires: number; bytes: number }>();
  let held = 0;

  function forget(key: string): void {
    const old = answers.get(key);
    if (!old) return;
    answers.delete(key);
    held -= old.bytes;
  }

  function remember(key: string, value: unknown): void {
    forget(key);
    const bytes = approxBytes([key, value], MTA_DNS_CACHE_BYTES / 8 + 1);
    if (bytes > MTA_DNS_CACHE_BYTES / 8) return;
    if (answers.size >= MAX_ANSWERS || held + bytes > MTA_DNS_CACHE_BYTES) {
      const t = now();
      for (const [k, v] of answers) if (v.expires <= t) forget(k);
      if (answers.size >= MAX_ANSWERS || held + bytes > MTA_DNS_CACHE_BYTES) {
        answers.clear();
        held = 0;
      }
    }
    answers.set(key, { value, expires: now() + ttlMs, bytes });
    held += bytes;
  }

  function lookup<T>(kind: Lookup, name: string, run: () => Promise<T>): Promise<T> {
    const key = `${kind} ${name.toLowerCase()}`;
    const cached = answers.get(key);
    if (cached && cached.expires > now()) return Promise.resolve(cached.value as T);
    if (cached) forget(key);
    const inFlight = pending.get(key);
    if (inFlight) return inFlight as Promise<T>;
    const p = run().then(
      (value) => {
        pending.delete(key);
        if (ttlMs > 0) remember(key, value);
        return value;
      },
      (err: unknown) => {
        pending.delete(key);
        throw err;
      },
    );
    pending.set(key, p);
    return p;
  }

  return {
    mx: (name) => lookup('mx', name, () => dns.mx(name)),
    a: (name) => lookup('a', name, () => dns.a(name)),
    aaaa: (name) => lookup('aaaa', name, () => dns.aaaa(name)),
  };
}
