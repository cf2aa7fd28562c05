// A short-lived in-memory cache of facts read from rows whose owner announces its changes (core/signal.ts):
// the listener calls `clear()`. A value whose load was under way when a change was announced is returned but
// not kept (it may have been read before the change). The time limit only bounds how long a change made by
// another process on the same database file (the admin CLI) can go unseen.
import { performance } from 'node:perf_hooks';
import type { Signal } from './signal.js';

export class ForgetfulCache<K, V> {
  private generation = 0;
  private readonly entries = new Map<K, { until: number; value: V }>();
  /** Loads under way: asked for again meanwhile, a key waits for the same load (no read per caller). */
  private readonly loading = new Map<K, Promise<V>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  /** Forgets everything, including what is being loaded now (later callers load afresh). */
  clear(): void {
    this.generation++;
    this.entries.clear();
    this.loading.clear();
  }

  /** The remembered value, or `load()`'s (one load at a time per key), kept when `keep` says so (by default always). */
  get(key: K, load: () => Promise<V>, keep: (value: V) => boolean = () => true): Promise<V> {
    const now = performance.now();
    const hit = this.entries.get(key);
    if (hit && hit.until > now) return Promise.resolve(hit.value);
    const pending = this.loading.get(key);
    if (pending) return pending;
    const generation = this.generation;
    const loaded = load().then(
      (value) => {
        if (this.loading.get(key) === loaded) this.loading.delete(key);
        if (generation !== this.generation) return value; // read before a change: answered, not kept
        if (keep(value)) {
          if (this.entries.size >= this.maxEntries) this.entries.clear();
          this.entries.set(key, { until: now + this.ttlMs, value });
        } else {
          this.entries.delete(key);
        }
        return value;
      },
      (err: unknown) => {
        if (this.loading.get(key) === loaded) this.loading.delete(key);
        throw err;
      },
    );
    this.loading.set(key, loaded);
    return loaded;
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
