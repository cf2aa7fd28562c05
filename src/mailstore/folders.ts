// Folders: list (with counts), get, create (with parents), delete, rename (RFC 3501 §6.3.5, INBOX too); and the
// subscriptions, which are names apart from the folders (mail_subscriptions, migration 032): DELETE and RENAME
// leave them as they are (RFC 3501 §6.3.6; Dovecot does the same), SUBSCRIBE takes a name that is no folder.
import { placeholders, type Tx } from '../db/index.js';
import { removeMessages } from './messages.js';
import { messageWriterOf } from './message-writer.js';
import { recordVanished } from './vanished.js';
import {
  announce,
  changeRow,
  insertFolder,
  loadMailbox,
  nextModseq,
  normalizePath,
  parentsOf,
  saveMailboxes,
  toFolder,
  type Core,
  type FolderRow,
  type MessageRow,
  type Pending,
} from './rows.js';
import { FOLDER_DELIMITER, MailStoreError, type Change, type Folder } from './types.js';

interface Counts {
  folder_id: number;
  messages: number;
  unseen: number;
  recent: number;
  size: number;
}

const COUNTS_SQL = `SELECT m.folder_id, COUNT(*) AS messages, SUM(m.size) AS size,
  SUM(CASE WHEN (' ' || m.flags || ' ') LIKE '% \\Seen %' THEN 0 ELSE 1 END) AS unseen,
  SUM(CASE WHEN m.uid >= f.recent_uid THEN 1 ELSE 0 END) AS recent
  FROM mail_messages m JOIN mail_folders f ON f.id = m.folder_id WHERE m.folder_id IN (%IDS%) GROUP BY m.folder_id`;

async function withCounts(core: Core, rows: FolderRow[]): Promise<Folder[]> {
  if (rows.length === 0) return [];
  const counts = (await core.reads.raw(COUNTS_SQL.replace('%IDS%', placeholders(rows.length)), rows.map((r) => r.id))) as Counts[];
  const byId = new Map(counts.map((c) => [c.folder_id, c]));
  return rows.map((r) => toFolder(r, byId.get(r.id)));
}

/** INBOX first, then by path. */
const order = (a: FolderRow, b: FolderRow) => (a.path === 'INBOX' ? -1 : b.path === 'INBOX' ? 1 : a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/** Paths that are `path` or below it. */
const under = (path: string) => (q: import('knex').Knex.QueryBuilder) =>
  q.where('path', path).orWhereRaw('substr(path, 1, ?) = ?', [path.length + 1, path + FOLDER_DELIMITER]);

export function createFolderOps(core: Core) {
  async function inTx<T>(fn: (trx: Tx, pending: Pending[]) => Promise<T>): Promise<T> {
    const pending: Pending[] = [];
    const out = await core.db.transaction((trx) => fn(trx, pending));
    announce(core, pending);
    return out;
  }

  async function findRow(q: Tx | Core['reads'], mailboxId: number, path: string): Promise<FolderRow | undefined> {
    return (await q('mail_folders').where({ mailbox_id: mailboxId, path: normalizePath(path) }).first()) as FolderRow | undefined;
  }

  async function requireRow(trx: Tx, mailboxId: number, path: string): Promise<FolderRow> {
    const row = await findRow(trx, mailboxId, path);
    if (!row) throw new MailStoreError(`Folder '${path}' does not exist`, 'not_found');
    return row;
  }

  return {
    async listFolders(mailboxId: number): Promise<Folder[]> {
      const rows = (await core.reads('mail_folders').where({ mailbox_id: mailboxId })) as FolderRow[];
      return withCounts(core, rows.sort(order));
    },

    async getFolder(mailboxId: number, path: string, opts: { counts?: boolean } = {}): Promise<Folder | null> {
      const row = await findRow(core.reads, mailboxId, path);
      if (row && opts.counts === false) return toFolder(row);
      return row ? (await withCounts(core, [row]))[0]! : null;
    },

    async getFolderById(folderId: number): Promise<Folder | null> {
      const row = (await core.reads('mail_folders').where({ id: folderId }).first()) as FolderRow | undefined;
      return row ? (await withCounts(core, [row]))[0]! : null;
    },

    async createFolder(mailboxId: number, path: string, opts: { subscribed?: boolean } = {}): Promise<Folder> {
      const p = normalizePath(path);
      const row = await inTx(async (trx, pending) => {
        const m = await loadMailbox(trx, mailboxId);
        const created = await insertFolder(core, trx, m, p, pending, null, opts.subscribed ?? true);
        await saveMailboxes(core, trx, [m]);
        return created;
      });
      return toFolder(row);
    },

    async deleteFolder(mailboxId: number, path: string): Promise<void> {
      const p = normalizePath(path);
      if (p === 'INBOX') throw new MailStoreError('INBOX cannot be deleted', 'invalid');
      await inTx(async (trx, pending) => {
        const m = await loadMailbox(trx, mailboxId);
        const row = await requireRow(trx, mailboxId, p);
        // Subfolders stay (RFC 3501 §6.3.4: DELETE removes no inferior names, and "it is permitted to delete a
        // name that has inferior hierarchical names"); the name goes on as their \Noselect parent, as any
        // parent that is no folder of its own.
        const messages = (await trx('mail_messages').where({ folder_id: row.id })) as MessageRow[];
        await removeMessages(trx, m, messages); // no expunge changes: the folder's `deleted` change says it all
        await trx('mail_folders').where({ id: row.id }).delete();
        const change: Change = { modseq: nextModseq(m), folderId: row.id, kind: 'folder', change: 'deleted', path: p };
        await trx('mail_changes').insert(changeRow(m.id, change, core.clock.now().getTime()));
        pending.push({ mailboxId, change });
        await saveMailboxes(core, trx, [m]);
      });
    },

    async renameFolder(mailboxId: number, from: string, to: string): Promise<void> {
      const src = normalizePath(from);
      const dst = normalizePath(to);
      if (dst === 'INBOX') throw new MailStoreError('Folder INBOX already exists', 'exists');
      if (src !== 'INBOX' && (dst === src || dst.startsWith(src + FOLDER_DELIMITER))) throw new MailStoreError(`Cannot rename '${src}' into itself`, 'invalid');
      await inTx(async (trx, pending) => {
        const m = await loadMailbox(trx, mailboxId);
        const row = await requireRow(trx, mailboxId, src);
        if (await findRow(trx, mailboxId, dst)) throw new MailStoreError(`Folder '${dst}' already exists`, 'exists');

        if (src === 'INBOX') {
          // RFC 3501 §6.3.5: the messages move to a new folder of that name; INBOX stays, empty; INBOX's
          // subfolders are not renamed. The UIDs move along (the new folder has its own UIDVALIDITY).
          const created = await insertFolder(core, trx, m, dst, pending, null, false);
          const uids = ((await trx('mail_messages').where({ folder_id: row.id }).orderBy('uid').select('uid')) as Array<{ uid: number }>).map((r) => r.uid);
          if (uids.length > 0) {
            const modseq = nextModseq(m);
            await trx('mail_messages').where({ folder_id: row.id }).update({ folder_id: created.id });
            await trx('mail_folders').where({ id: created.id }).update({ uid_next: row.uid_next, highest_modseq: modseq });
            await trx('mail_folders').where({ id: row.id }).update({ highest_modseq: modseq });
            const changes = uids.map((uid): Change => ({ modseq, folderId: row.id, kind: 'expunge', uid }));
            for (let i = 0; i < changes.length; i += 4000) await trx('mail_changes').insert(changes.slice(i, i + 4000).map((c) => changeRow(mailboxId, c, core.clock.now().getTime())));
            await recordVanished(trx, row.id, uids, modseq);
            pending.push(...changes.map((change) => ({ mailboxId, change })));
          }
          await saveMailboxes(core, trx, [m]);
          return;
        }

        // Missing parents of the new name are created; the folder and its children keep their UIDVALIDITY.
        for (const parent of parentsOf(dst)) {
          if (parent === src || (await findRow(trx, mailboxId, parent))) continue;
          await insertFolder(core, trx, m, parent, pending, null, false);
        }
        const moving = (await trx('mail_folders').where({ mailbox_id: mailboxId }).andWhere(under(src))) as FolderRow[];
        const modseq = nextModseq(m);
        for (const f of moving) {
          const path = dst + f.path.slice(src.length);
          await trx('mail_folders').where({ id: f.id }).update({ path });
          const change: Change = { modseq, folderId: f.id, kind: 'folder', change: 'renamed', path };
          await trx('mail_changes').insert(changeRow(mailboxId, change, core.clock.now().getTime()));
          pending.push({ mailboxId, change });
        }
        await saveMailboxes(core, trx, [m]);
      });
    },

    claimRecent(folderId: number, lastUid: number): Promise<number> {
      // In the shared write transactions of STORE/EXPUNGE (message-writer.ts): every SELECT after new mail claims.
      return messageWriterOf(core)<number>({ kind: 'claim', folderId, lastUid });
    },

    async setSubscribed(mailboxId: number, path: string, subscribed: boolean): Promise<void> {
      const p = normalizePath(path);
      if (subscribed) {
        await core.db.raw('INSERT OR IGNORE INTO mail_subscriptions (mailbox_id, path, created_at) VALUES (?, ?, ?)', [mailboxId, p, core.clock.now().toISOString()]);
      } else {
        await core.db('mail_subscriptions').where({ mailbox_id: mailboxId, path: p }).delete();
      }
    },

    async listSubscriptions(mailboxId: number): Promise<string[]> {
      const rows = (await core.reads('mail_subscriptions').where({ mailbox_id: mailboxId }).orderBy('path').select('path')) as Array<{ path: string }>;
      return rows.map((r) => r.path);
    },
  };
}
