// A short-lived in-memory cache of what the MX reads for every recipient and every message: the recipient's
// route (local domain, mailbox/alias/catch-all resolution, the accounts) and each mailbox's filter rules.
// A burst of mail to the same few addresses then costs no database round trip per recipient.
//
// Correctness does not rest on the time limit: the owners of those rows announce every change once it has
// settled — the mail store for accounts, aliases and filter rules (`onDirectoryChange`), services/domains.ts
// for domains (`ctx.domainChanges`) — and each announcement empties the cache. A value whose load was under
// way when an announcement came is returned but not kept (it may have been read before the change). The
// time limit (`ttlMs`) only bounds how long a change made by another process on the same file (the admin
// CLI) can go unseen.
//
// What is not cached: a mailbox's used bytes. Routes keep the accounts as read; the RCPT quota check reads
// fresh figures for accounts that have a quota (services/inbound-routing.ts), and the store checks again,
// atomically, when it delivers.
import { performance } from 'node:perf_hooks';
import type { AppContext } from '../context.js';
import type { FilterRule } from '../mailstore/types.js';

interface Entry<V> {
  until: number;
  value: V;
}

export class InboundDirectory {
  private generation = 0;
  private readonly routes = new Map<string, Entry<unknown>>();
  private readonly filters = new Map<number, Entry<FilterRule[]>>();

  constructor(
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 20_000,
  ) {}

  /** Forgets everything, including what is being loaded now. */
  clear(): void {
    this.generation++;
    this.routes.clear();
    this.filters.clear();
  }

  route<V>(address: string, load: () => Promise<V>): Promise<V> {
    return this.cached(this.routes as Map<string, Entry<V>>, address, load);
  }

  filterRules(mailboxId: number, load: () => Promise<FilterRule[]>): Promise<FilterRule[]> {
    return this.cached(this.filters, mailboxId, load);
  }

  private async cached<K, V>(map: Map<K, Entry<V>>, key: K, load: () => Promise<V>): Promise<V> {
    const now = performance.now();
    const hit = map.get(key);
    if (hit && hit.until > now) return hit.value;
    const generation = this.generation;
    const value = await load();
    if (generation === this.generation) {
      if (map.size >= this.maxEntries) map.clear();
      map.set(key, { until: now + this.ttlMs, value });
    }
    return value;
  }
}

const directories = new WeakMap<AppContext, InboundDirectory>();

/** The box's directory (one per context, listening to the store's and the domains' changes from its creation). */
export function directoryOf(ctx: AppContext): InboundDirectory {
  let dir = directories.get(ctx);
  if (!dir) {
    const fresh = new InboundDirectory();
    ctx.mailstore.onDirectoryChange(() => fresh.clear());
    ctx.domainChanges.listen(() => fresh.clear());
    directories.set(ctx, (dir = fresh));
  }
  return dir;
}
