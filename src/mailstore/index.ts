// The mail store: `createMailStore` builds the one implementation of the MailStore contract
// (src/mailstore/types.ts) over the appliance's SQLite file. Reached as `ctx.mailstore`; nothing else
// touches its tables (migration 006).
//
// Layout: accounts.ts (accounts, logins, resolution, shares, filters, aliases), folders.ts, messages.ts
// (flags, copy, move, expunge), delivery.ts (deliver + append through one group-commit writer),
// headers.ts (header block, ENVELOPE summary), flags.ts, filters.ts (planDelivery), rows.ts (shared).
//
// Blob garbage: a source's reference count is kept by triggers on the message rows (migration 006), and a
// source left with no reference is deleted in that same transaction, however the rows went (expunge,
// folder delete, or the cascade of deleting a domain or team). No sweep needed.
// Soft-deleted accounts keep their messages until retention purges them (`purgeDeletedAccounts`).
import { EventEmitter } from 'node:events';
import type { Clock } from '../core/clock.js';
import { Signal } from '../core/signal.js';
import { readsOf, type Db } from '../db/index.js';
import { createAccountOps } from './accounts.js';
import { createDeliveryWriter } from './delivery.js';
import { createFolderOps } from './folders.js';
import { createMessageOps } from './messages.js';
import { toChange, type ChangeRow, type Core } from './rows.js';
import type { Change, MailStore } from './types.js';

export * from './types.js';
export { planDelivery } from './filters.js';
export { parseHeaders, summarize, headerSize } from './headers.js';

export interface MailStoreOptions {
  db: Db;
  clock: Clock;
}

export function createMailStore(opts: MailStoreOptions): MailStore {
  const feed = new EventEmitter();
  feed.setMaxListeners(0);
  const core: Core = { db: opts.db, reads: readsOf(opts.db), clock: opts.clock, feed, directory: new Signal() };
  const writer = createDeliveryWriter(core);
  return {
    ...createAccountOps(core),
    ...createFolderOps(core),
    ...createMessageOps(core),
    deliver: writer.deliver,
    append: writer.append,

    async changesSince(mailboxId: number, modseq: number): Promise<Change[]> {
      const rows = (await core.reads('mail_changes').where({ mailbox_id: mailboxId }).andWhere('modseq', '>', modseq).orderBy('modseq').orderBy('id')) as ChangeRow[];
      return rows.map(toChange);
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
