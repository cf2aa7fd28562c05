// The mail store: `createMailStore` builds the one implementation of the MailStore contract
// (src/mailstore/types.ts) over the appliance's SQLite file. Reached as `ctx.mailstore`; nothing else
// touches its tables (migration 006).
//
// Layout: accounts.ts (accounts, logins, resolution, shares, filters, aliases), folders.ts, messages.ts
// (flags, copy, move, expunge), vanished.ts (QRESYNC's tombstones of expunged UIDs), delivery.ts (deliver + append through one group-commit writer),
// headers.ts (header block, ENVELOPE summary), flags.ts, filters.ts (planDelivery), rows.ts (shared).
//
// Blob garbage: a source's reference count is kept by triggers on the message rows (migration 006), and a
// source left with no reference is deleted in that same transaction, however the rows went (expunge,
// folder delete, or the cascade of deleting a domain or team). No sweep needed.
// Soft-deleted accounts keep their messages until retention purges them (`purgeDeletedAccounts`).
import { EventEmitter } from 'node:events';
import type { Clock } from '../core/clock.js';
import { Signal } from '../core/signal.js';
import { queryRows, readsOf, type Db } from '../db/index.js';
import { createAccountOps } from './accounts.js';
import { createDeliveryWriter } from './delivery.js';
import { createFolderOps } from './folders.js';
import { createMessageOps } from './messages.js';
import { createVanishedOps } from './vanished.js';
import { toChange, type ChangeRow, type Core } from './rows.js';
import { createTextSearch } from './search-text.js';
import { createTextIndexer } from './text-index.js';
import type { JobQueue } from '../jobs/queue.js';
import type { Change, MailStore } from './types.js';

/** Changes deleted per `pruneChanges` call (one short transaction). */
export const CHANGE_PRUNE_BATCH = 5_000;

export * from './types.js';
export { planDelivery } from './filters.js';
export { parseHeaders, summarize, headerSize } from './headers.js';
export { baseSubject, collationKey, sortKeysOf } from './sort-keys.js';

export interface MailStoreOptions {
  db: Db;
  clock: Clock;
  /** Runs the full-text index job (text-index.ts). Without it new sources stay unindexed until `indexText` is called; SEARCH still finds them. */
  jobs?: JobQueue;
}

export function createMailStore(opts: MailStoreOptions): MailStore {
  const feed = new EventEmitter();
  feed.setMaxListeners(0);
  const core: Core = { db: opts.db, reads: readsOf(opts.db), clock: opts.clock, feed, directory: new Signal() };
  const indexer = createTextIndexer(core, opts.jobs);
  const writer = createDeliveryWriter(core, indexer);
  async function changesSince(mailboxId: number, modseq: number): Promise<Change[]> {
    const rows = (await core.reads('mail_changes').where({ mailbox_id: mailboxId }).andWhere('modseq', '>', modseq).orderBy('modseq').orderBy('id')) as ChangeRow[];
    return rows.map(toChange);
  }
  return {
    ...createAccountOps(core),
    ...createFolderOps(core),
    ...createMessageOps(core),
    ...createTextSearch(core),
    ...createVanishedOps(core),
    deliver: writer.deliver,
    append: writer.append,
    appendAll: writer.appendAll,

    async indexText(): Promise<number> {
      let n = 0;
      for (let left = true; left; ) {
        const r = await indexer.indexBatch();
        n += r.indexed;
        left = r.left;
      }
      return n;
    },

    changesSince,

    async syncChanges(mailboxId: number, modseq: number): Promise<Change[] | null> {
      // The changes and the prune mark in one statement (one snapshot: a prune either ran before it, and its mark
      // is seen, or after, and the changes are whole); a row with no change when there is none. Every session
      // that saw a change runs this before its next command's answer: one trip, not two.
      const rows = await queryRows<ChangeRow & { pruned: number; kind: ChangeRow['kind'] | null }>(
        core.reads,
        `SELECT b.changes_pruned_modseq AS pruned, c.mailbox_id, c.modseq, c.folder_id, c.kind, c.uid, c.flags, c.path
           FROM mailboxes b LEFT JOIN mail_changes c ON c.mailbox_id = b.id AND c.modseq > ?
          WHERE b.id = ? ORDER BY c.modseq, c.id`,
        [modseq, mailboxId],
      );
      if (rows.length > 0 && modseq < rows[0]!.pruned) return null;
      return rows.filter((r) => r.kind !== null).map(toChange);
    },

    async pruneChanges(before: Date, limit = CHANGE_PRUNE_BATCH): Promise<number> {
      const cutoff = before.getTime();
      return opts.db.transaction(async (trx) => {
        // Ids ascend with time (one writer), so what is older than the cutoff is a prefix of the table in id
        // order: read the first `limit` rows and keep those before the first one inside the window (rows from
        // before migration 009 have no time and count as old). Cost ∝ rows deleted, no index on the time.
        const head = (await trx('mail_changes').orderBy('id').limit(limit).select('id', 'mailbox_id', 'modseq', 'created_ms')) as Array<{
          id: number;
          mailbox_id: number;
          modseq: number;
          created_ms: number | null;
        }>;
        const marks = new Map<number, number>();
        let lastId = 0;
        let n = 0;
        for (const r of head) {
          if (r.created_ms !== null && r.created_ms >= cutoff) break;
          lastId = r.id;
          n++;
          marks.set(r.mailbox_id, Math.max(marks.get(r.mailbox_id) ?? 0, r.modseq));
        }
        if (n === 0) return 0;
        for (const [id, modseq] of marks) {
          await trx('mailboxes').where({ id }).andWhere('changes_pruned_modseq', '<', modseq).update({ changes_pruned_modseq: modseq });
        }
        await trx('mail_changes').where('id', '<=', lastId).delete();
        return n;
      });
    },

    async hasChangesBefore(before: Date): Promise<boolean> {
      // The oldest change is the first by id (ids ascend with time).
      const first = (await core.reads('mail_changes').orderBy('id').first('created_ms')) as { created_ms: number | null } | undefined;
      return first !== undefined && (first.created_ms === null || first.created_ms < before.getTime());
    },

    onChange(mailboxId: number, listener: (change: Change) => void): () => void {
      const name = String(mailboxId);
      // A listener that throws must not break the writer that announces (it runs after commit).
      const safe = (change: Change) => {
        try {
          listener(change);
        } catch {
          /* the listener's own problem */
        }
      };
      feed.on(name, safe);
      return () => feed.off(name, safe);
    },

    onDirectoryChange(listener: () => void): () => void {
      return core.directory.listen(listener);
    },
  };
}
