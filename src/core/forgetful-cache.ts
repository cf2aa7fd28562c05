// A short-lived in-memory cache of facts read from rows whose owner announces its changes (core/signal.ts):
// the listener calls `clear()`. A value whose load was under way when a change was announced is returned but
// not kept (it may have been read before the change). The time limit only bounds how long a change made by
// another process on the same database file (the admin CLI) can go unseen.
import { performance } from 'node:perf_hooks';
import type { Signal } from './signal.js';

export class ForgetfulCache<K, V> {
  private generation = 0;
  private readonly entries = new Map<K, { until: number; value: V }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  /** Forgets everything, including what is being loaded now. */
  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  /** The remembered value, or `load()`'s, kept when `keep` says so (by default always). */
  async get(key: K, load: () => Promise<V>, keep: (value: V) => boolean = () => true): Promise<V> {
    const now = performance.now();
    const hit = this.entries.get(key);
    if (hit && hit.until > now) return hit.value;
    const generation = this.generation;
    const value = await load();
    if (generation === this.generation && keep(value)) {
      if (this.entries.size >= this.maxEntries) this.entries.clear();
      this.entries.set(key, { until: now + this.ttlMs, value });
    } else {
      this.entries.delete(key);
    }
    return value;
  }
}

/**
 * One cache per owner (an AppContext), made on its first use and emptied whenever the owner's `changes`
 * signal is emitted.
 */
export function forgetfulCachePer<O extends object, K, V>(ttlMs: number, maxEntries: number, changes: (owner: O) => Signal): (owner: O) => ForgetfulCache<K, V> {
  const caches = new WeakMap<O, ForgetfulCache<K, V>>();
  return (owner) => {
    let cache = caches.get(owner);
    if (!cache) {
      const fresh = new ForgetfulCache<K, V>(ttlMs, maxEntries);
      changes(owner).listen(() => fresh.clear());
      caches.set(owner, (cache = fresh));
    }
    return cache;
  };
}
