// A short-lived in-memory cache of what the MX reads for every recipient and every message: the recipient's
// route (local domain, mailbox/alias/catch-all resolution, the accounts) and each mailbox's filter rules.
// A burst of mail to the same few addresses then costs no database round trip per recipient.
//
// Correctness does not rest on the time limit: every write statement through the box's database (ctx.db is
// the one writer connection) that touches a table a route or a rule is read from empties the cache, and
// nothing read while such a write may still be uncommitted is kept (see `watch`). The tables: domains,
// teams (their deletion cascades), mailboxes (but not the store's counter update: used bytes, MODSEQ,
// UIDVALIDITY, which no route depends on), mail_aliases, mail_alias_targets, mailbox_filters. Unrecognised
// write statements (DDL, anything odd) empty it too. The time limit (`ttlMs`) only bounds how long a write
// made by another process on the same file (the admin CLI) can go unseen.
//
// What is not cached: a mailbox's used bytes. Routes keep the accounts as read; the RCPT quota check reads
// fresh figures for accounts that have a quota (services/inbound-routing.ts), and the store checks again,
// atomically, when it delivers.
import { performance } from 'node:perf_hooks';
import type { Db } from '../db/index.js';
import type { FilterRule } from '../mailstore/types.js';

/** Tables that routes and filter rules are read from. */
const WATCHED_TABLES = new Set(['domains', 'teams', 'mailboxes', 'mail_aliases', 'mail_alias_targets', 'mailbox_filters']);
/** mailboxes columns that no route depends on (the store's counters, src/mailstore/rows.ts saveMailboxes). */
const COUNTER_COLUMNS = new Set(['used_bytes', 'highest_modseq', 'last_uid_validity', 'updated_at']);
const NOT_A_WRITE = /^(?:select|begin|commit|end|rollback|savepoint|release|pragma|explain)\b/i;
const WRITE_TARGET = /^(?:(?:insert|replace)(?:\s+or\s+\w+)?\s+into|update(?:\s+or\s+\w+)?|delete\s+from)\s+[`"[]?(\w+)/i;

/** True when a statement run on the writer may change a route or a filter rule. */
export function affectsDirectory(sql: string): boolean {
  const s = sql.trimStart();
  if (NOT_A_WRITE.test(s)) return false;
  const m = WRITE_TARGET.exec(s);
  if (!m) return true;
  const table = m[1]!.toLowerCase();
  if (!WATCHED_TABLES.has(table)) return false;
  if (table !== 'mailboxes' || !/^update\b/i.test(s)) return true;
  // An UPDATE of mailboxes that sets only counters leaves every route as it was.
  const where = s.search(/\swhere\s/i);
  const set = s.slice(0, where < 0 ? undefined : where);
  const columns = [...set.matchAll(/[`"[](\w+)[`"\]]\s*=/g)].map((c) => c[1]!.toLowerCase());
  return columns.length === 0 || columns.some((c) => !COUNTER_COLUMNS.has(c));
}

interface Entry<V> {
  generation: number;
  until: number;
  value: V;
}

export class InboundDirectory {
  private generation = 0;
  /** Watched writes whose transaction may not have ended yet: nothing read meanwhile is kept. */
  private unsettled = 0;
  private readonly routes = new Map<string, Entry<unknown>>();
  private readonly filters = new Map<number, Entry<FilterRule[]>>();

  constructor(
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 20_000,
  ) {}

  /** Empties the cache whenever a statement that may change a route runs on `db` (the one writer). */
  watch(db: Db): void {
    db.on('query', (q: { sql?: unknown }) => {
      if (typeof q.sql !== 'string' || !affectsDirectory(q.sql)) return;
      this.generation++;
      this.unsettled++;
      // The writer is one pooled connection: a statement queued now runs after the transaction that made
      // this write has committed or rolled back. Only then is what the readers see settled again.
      const settle = () => {
        this.generation++;
        this.unsettled--;
      };
      db.raw('select 1').then(settle, settle);
    });
  }

  /** Empties the cache (tests, and anything that knows better). */
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
    if (hit && hit.generation === this.generation && hit.until > now) return hit.value;
    const generation = this.generation;
    const value = await load();
    if (this.unsettled === 0 && generation === this.generation) {
      if (map.size >= this.maxEntries) map.clear();
      map.set(key, { generation, until: now + this.ttlMs, value });
    }
    return value;
  }
}

const directories = new WeakMap<Db, InboundDirectory>();

/** The directory of the box whose writer is `db` (one per database, created and watching on first use). */
export function directoryOf(db: Db): InboundDirectory {
  let dir = directories.get(db);
  if (!dir) {
    dir = new InboundDirectory();
    dir.watch(db);
    directories.set(db, dir);
  }
  return dir;
}
