// The MTA's look-ups (MX, A, AAAA) at delivery rate: concurrent look-ups of one name share one query, and,
// when asked, answers are kept for a short while. Failures (DnsLookupError: SERVFAIL, timeout) are never
// kept, so the next delivery asks again.
import type { DnsResolver } from '../dns/resolver.js';

type Lookup = 'mx' | 'a' | 'aaaa';

/** Answers kept at most (then expired ones are swept, or all dropped). */
const MAX_ANSWERS = 10_000;

/** The look-ups the MTA makes. */
export type MtaDns = Pick<DnsResolver, 'mx' | 'a' | 'aaaa'>;

/**
 * `ttlMs` 0: only concurrent look-ups are shared (an answer is never older than the look-up itself).
 * `now` is the clock the TTL is measured on.
 */
export function sharedLookups(dns: DnsResolver, ttlMs: number, now: () => number): MtaDns {
  const pending = new Map<string, Promise<unknown>>();
  const answers = new Map<string, { value: unknown; expires: number }>();

  function remember(key: string, value: unknown): void {
    if (answers.size >= MAX_ANSWERS) {
      const t = now();
      for (const [k, v] of answers) if (v.expires <= t) answers.delete(k);
      if (answers.size >= MAX_ANSWERS) answers.clear();
    }
    answers.set(key, { value, expires: now() + ttlMs });
  }

  function lookup<T>(kind: Lookup, name: string, run: () => Promise<T>): Promise<T> {
    const key = `${kind} ${name.toLowerCase()}`;
    const cached = answers.get(key);
    if (cached && cached.expires > now()) return Promise.resolve(cached.value as T);
    if (cached) answers.delete(key);
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
