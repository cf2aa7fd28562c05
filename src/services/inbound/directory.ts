// A short-lived in-memory cache of what the MX reads for every recipient and every message: the recipient's
// route (local domain, mailbox/alias/catch-all resolution, the accounts) and each mailbox's filter rules.
// A burst of mail to the same few addresses then costs no database round trip per recipient.
//
// Correctness does not rest on the time limit: the owners of those rows announce every change once it has
// settled — the mail store for accounts, aliases and filter rules (`onDirectoryChange`), services/platform/domains.ts
// for domains (`ctx.domainChanges`) — and each announcement empties the cache (core/forgetful-cache.ts).
//
// What is not cached: a mailbox's used bytes. Routes keep the accounts as read; the RCPT quota check reads
// fresh figures for accounts that have a quota (services/inbound/routing.ts), and the store checks again,
// atomically, when it delivers.
import type { AppContext } from '../../context.js';
import { ForgetfulCache } from '../../core/forgetful-cache.js';
import type { FilterRule } from '../../mailstore/types.js';

export class InboundDirectory {
  private readonly routes: ForgetfulCache<string, unknown>;
  private readonly filters: ForgetfulCache<number, FilterRule[]>;

  constructor(ttlMs = 5_000, maxEntries = 20_000) {
    this.routes = new ForgetfulCache(ttlMs, maxEntries);
    this.filters = new ForgetfulCache(ttlMs, maxEntries);
  }

  /** Forgets everything, including what is being loaded now. */
  clear(): void {
    this.routes.clear();
    this.filters.clear();
  }

  route<V>(address: string, load: () => Promise<V>): Promise<V> {
    return this.routes.get(address, load) as Promise<V>;
  }

  filterRules(mailboxId: number, load: () => Promise<FilterRule[]>): Promise<FilterRule[]> {
    return this.filters.get(mailboxId, load);
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
