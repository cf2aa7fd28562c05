// A short-lived in-memory cache of facts read from rows whose owner announces its changes (core/signal.ts):
// the listener calls `clear()`. A value whose load was under way when a change was announced is returned but
// not kept (it may have been read before the change). The time limit only bounds how long a change made by
// another process on the same database file (the admin CLI) can go unseen.
//
// Bounded twice: at most `maxEntries` entries and at most `maxBytes` bytes (core/byte-size.ts's estimate of the
// values and keys); full, it is emptied (a burst refills it at one read per key). A value larger than
// `maxBytes / 8` (of a one-entry cache: `maxBytes`) is answered but not kept, so one large value does not push
// the rest out.
import { performance } from 'node:perf_hooks';
import { approxBytes } from './byte-size.js';
import type { Signal } from './signal.js';

/** The byte ceiling of a cache that is given none. */
export const DEFAULT_CACHE_BYTES = 4 * 1024 * 1024;

export class ForgetfulCache<K, V> {
  private generation = 0;
  private readonly entries = new Map<K, { until: number; value: V; bytes: number }>();
  private bytes = 0;
  /** Loads under way: asked for again meanwhile, a key waits for the same load (no read per caller). */
  private readonly loading = new Map<K, Promise<V>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly maxBytes = DEFAULT_CACHE_BYTES,
    private readonly sizeOf: (key: K, value: V, limit: number) => number = (key, value, limit) => approxBytes([key, value], limit),
  ) {}

  /** Forgets everything, including what is being loaded now (later callers load afresh). */
  clear(): void {
    this.generation++;
    this.entries.clear();
    this.bytes = 0;
    this.loading.clear();
  }

  /** The bytes the kept entries hold (the estimate the bound is checked against). */
  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  private forget(key: K): void {
    const old = this.entries.get(key);
    if (!old) return;
    this.entries.delete(key);
    this.bytes -= old.bytes;
  }

  private keep(key: K, value: V, until: number): void {
    this.forget(key);
    const largest = this.maxEntries === 1 ? this.maxBytes : this.maxBytes / 8;
    const bytes = this.sizeOf(key, value, largest + 1);
    if (bytes > largest) return;
    if (this.entries.size >= this.maxEntries || this.bytes + bytes > this.maxBytes) {
      this.entries.clear();
      this.bytes = 0;
    }
    this.entries.set(key, { until, value, bytes });
    this.bytes += bytes;
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
        if (keep(value)) this.keep(key, value, now + this.ttlMs);
        else this.forget(key);
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
export function forgetfulCachePer<O extends object, K, V>(ttlMs: number, maxEntries: number, changes: (owner: O) => Signal, maxBytes = DEFAULT_CACHE_BYTES): (owner: O) => ForgetfulCache<K, V> {
  const caches = new WeakMap<O, ForgetfulCache<K, V>>();
  return (owner) => {
    let cache = caches.get(owner);
    if (!cache) {
      const fresh = new ForgetfulCache<K, V>(ttlMs, maxEntries, maxBytes);
      changes(owner).listen(() => fresh.clear());
      caches.set(owner, (cache = fresh));
    }
    return cache;
  };
}
