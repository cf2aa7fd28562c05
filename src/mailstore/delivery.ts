// Storing new messages: `deliver` (MX, filters) and `append` (IMAP APPEND, Sent copies) share one
// group-commit writer (src/db/batcher.ts). The calls that arrive while a write transaction runs share the
// next one: one statement reads the mailboxes and target folders, one multi-row statement each writes blobs,
// messages and changes, one statement each the folder and mailbox counters; all but the sources' go as one write
// script with the COMMIT (db/script.ts: one trip through SQLite's thread). The SHA-256, the header summary and
// the sort keys are computed before queueing, outside the transaction (one read of the header block). The
// full-text index is not written here: new sources are marked for the index job (text-index.ts). A call that fails on its own terms (quota,
// unknown mailbox or folder) fails alone; the others in its batch commit. `appendAll` (IMAP MULTIAPPEND) is one
// call for several messages: all of them are stored, or none.
import { createHash } from 'node:crypto';
import { Batcher } from '../db/batcher.js';
import { placeholders, type Tx } from '../db/index.js';
import { insertRows as insertScripted } from '../db/batcher.js';
import { commitScript, openScript, write } from '../db/script.js';
import { normalizeFlags } from './flags.js';
import { parseHeaders, summarize, withCrlfLineEnds } from './headers.js';
import { sortKeysOf } from './sort-keys.js';
import type { TextIndexer } from './text-index.js';
import {
  announce,
  changeRow,
  insertFolder,
  mailboxState,
  nextModseq,
  normalizePath,
  nowIso,
  overQuota,
  saveMailboxes,
  selectIn,
  unique,
  updateById,
  type ChangeRow,
  type Core,
  type FolderRow,
  type MailboxRow,
  type MailboxState,
  type MessageRow,
  type Pending,
} from './rows.js';
import { MailStoreError, type AppendInput, type DeliverOptions, type DeliveryTarget, type StoredCopy, type ZonedDate } from './types.js';

interface Item {
  blobId: string;
  raw: Buffer;
  summary: string;
  /** JSON SortKeys (sort-keys.ts), written with the row like the summary. */
  sortKeys: string;
  size: number;
  targets: Array<{ mailboxId: number; path: string; flags: string[] }>;
  internalDate: string;
  onQuota: 'fail' | 'skip';
  /** Create missing folders (deliver) or refuse with not_found (append: IMAP answers TRYCREATE). */
  createFolders: boolean;
  /** More messages stored with this one, all or none (appendAll); their copies follow this one's. */
  group?: Item[];
}

type Outcome = { copies: StoredCopy[] } | { error: MailStoreError };

interface FolderState {
  row: FolderRow;
  uidNext: number;
  modseq: number;
  dirty: boolean;
}

export interface DeliveryWriter {
  deliver(raw: Buffer, targets: DeliveryTarget[], opts?: DeliverOptions): Promise<StoredCopy[]>;
  append(mailboxId: number, path: string, raw: Buffer, flags?: string[], internalDate?: Date | ZonedDate): Promise<StoredCopy>;
  appendAll(mailboxId: number, path: string, messages: AppendInput[]): Promise<StoredCopy[]>;
}

export function createDeliveryWriter(core: Core, indexer: TextIndexer): DeliveryWriter {
  const batcher = new Batcher<Item, Outcome>((items) => writeBatch(core, indexer, items));

  async function submit(item: Item): Promise<StoredCopy[]> {
    const outcome = await batcher.submit(item);
    if ('error' in outcome) throw outcome.error;
    return outcome.copies;
  }

  function prepare(source: Buffer, internalDate: Date | ZonedDate | undefined): Pick<Item, 'blobId' | 'raw' | 'summary' | 'sortKeys' | 'size' | 'internalDate'> {
    if (source.length === 0) throw new MailStoreError('Empty message', 'invalid');
    const raw = withCrlfLineEnds(source);
    const headers = parseHeaders(raw); // read once, for the summary and the sort keys
    return {
      blobId: createHash('sha256').update(raw).digest('hex'),
      raw,
      summary: JSON.stringify(summarize(raw, headers)),
      sortKeys: JSON.stringify(sortKeysOf(headers)),
      size: raw.length,
      internalDate: internalDateText(internalDate ?? core.clock.now()),
    };
  }

  return {
    async deliver(raw, targets, opts = {}) {
      if (targets.length === 0) return [];
      // The same mailbox and folder named twice (a recipient and an alias of it) gets one copy, with the union of the flags.
      const merged = new Map<string, { mailboxId: number; path: string; flags: string[] }>();
      for (const t of targets) {
        const target = { mailboxId: t.mailboxId, path: normalizePath(t.folder ?? 'INBOX'), flags: normalizeFlags(t.flags ?? []) };
        const key = folderKey(target.mailboxId, target.path);
        const seen = merged.get(key);
        if (seen) seen.flags = normalizeFlags([...seen.flags, ...target.flags]);
        else merged.set(key, target);
      }
      const item: Item = {
        ...prepare(raw, opts.internalDate),
        targets: [...merged.values()],
        onQuota: opts.onQuota ?? 'fail',
        createFolders: true,
      };
      return submit(item);
    },
    async append(mailboxId, path, raw, flags = [], internalDate) {
      const item: Item = {
        ...prepare(raw, internalDate),
        targets: [{ mailboxId, path: normalizePath(path), flags: normalizeFlags(flags) }],
        onQuota: 'fail',
        createFolders: false,
      };
      const [copy] = await submit(item);
      return copy!;
    },
    async appendAll(mailboxId, path, messages) {
      if (messages.length === 0) return [];
      const items = messages.map(
        (msg): Item => ({
          ...prepare(msg.raw, msg.internalDate),
          targets: [{ mailboxId, path: normalizePath(path), flags: normalizeFlags(msg.flags ?? []) }],
          onQuota: 'fail',
          createFolders: false,
        }),
      );
      return submit({ ...items[0]!, group: items.slice(1) });
    },
  };
}

/**
 * The stored internal date: ISO 8601 in UTC (`…Z`), or with the zone it was given in (`2026-07-14T02:44:25.000-07:00`,
 * read back by toMeta). Only ever parsed as a date, never compared as text, so the two forms can live side by side.
 */
function internalDateText(d: Date | ZonedDate): string {
  if (d instanceof Date || d.zone === 0) return (d instanceof Date ? d : d.at).toISOString();
  const local = new Date(d.at.getTime() + d.zone * 60000).toISOString().slice(0, -1);
  const z = Math.abs(d.zone);
  return `${local}${d.zone < 0 ? '-' : '+'}${String(Math.floor(z / 60)).padStart(2, '0')}:${String(z % 60).padStart(2, '0')}`;
}

const folderKey = (mailboxId: number, path: string) => `${mailboxId}\u0000${path}`;

async function writeBatch(core: Core, indexer: TextIndexer, items: Item[]): Promise<Outcome[]> {
  const pending: Pending[] = [];
  let transaction: Tx | undefined;
  const outcomes = await core.db.transaction(async (trx) => {
    transaction = trx;
    const mailboxIds = unique(items.flatMap((i) => i.targets.map((t) => t.mailboxId)));
    const paths = unique(items.flatMap((i) => i.targets.map((t) => t.path)));
    const mailboxes = new Map<number, MailboxState>();
    const folders = new Map<string, FolderState>();
    for (const { mailbox, folder } of await loadTargets(trx, mailboxIds, paths)) {
      if (!mailboxes.has(mailbox.id)) mailboxes.set(mailbox.id, mailbox);
      if (folder) folders.set(folderKey(folder.mailbox_id, folder.path), { row: folder, uidNext: folder.uid_next, modseq: folder.highest_modseq, dirty: false });
    }

    const messages: MessageRow[] = [];
    const changes: ChangeRow[] = [];
    const blobs = new Map<string, { item: Item; refs: number }>();
    const results: Outcome[] = [];

    for (const item of items) {
      // A group is placed message by message on a copy of the counters it changes: a failure leaves them as they were.
      const mark = item.group ? snapshot(mailboxes, folders, messages, changes, pending, blobs) : null;
      try {
        const copies: StoredCopy[] = [];
        for (const one of [item, ...(item.group ?? [])]) copies.push(...(await place(core, trx, one, mailboxes, folders, messages, changes, pending, blobs)));
        results.push({ copies });
      } catch (err) {
        if (!(err instanceof MailStoreError)) throw err;
        mark?.restore();
        results.push({ error: err });
      }
    }

    // The writes answer nothing: one script, sent with the COMMIT (db/script.ts; a statement holding a value over
    // 64 KB, a large source, is bound in its place instead).
    openScript(trx);
    // Sources first (refcount 0; the message rows' trigger counts them), in statements of at most ~8 MB and 50
    // rows. An existing source is left as it is.
    const stored = [...blobs.values()].filter((b) => b.refs > 0);
    for (let i = 0; i < stored.length; ) {
      let bytes = 0;
      let j = i;
      while (j < stored.length && j - i < 50 && (j === i || bytes + stored[j]!.item.size <= 8 * 1024 * 1024)) bytes += stored[j++]!.item.size;
      const chunk = stored.slice(i, j);
      await write(
        trx,
        `INSERT INTO mail_blobs (sha256, size, refcount, created_at, raw) VALUES ${chunk.map(() => '(?, ?, 0, ?, ?)').join(', ')} ON CONFLICT (sha256) DO NOTHING`,
        chunk.flatMap((b) => [b.item.blobId, b.item.size, nowIso(core), b.item.raw]),
      );
      i = j;
    }
    // Marked for the full-text index, which the index job writes after (text-index.ts; a source stored
    // before is indexed or marked already).
    await indexer.markNew(trx, stored.map((b) => b.item.blobId));
    await insertScripted(trx, 'mail_messages', messages);
    await insertScripted(trx, 'mail_changes', changes);
    const dirtyFolders = [...folders.values()].filter((f) => f.dirty);
    await updateById(
      trx,
      'mail_folders',
      dirtyFolders.map((f) => ({ id: f.row.id, values: { uid_next: f.uidNext, highest_modseq: f.modseq } })),
      ['uid_next', 'highest_modseq'],
    );
    await saveMailboxes(core, trx, mailboxes.values());
    await commitScript(trx);
    return results;
  }).catch((err: unknown) => {
    if (transaction) indexer.rolledBack(transaction);
    throw err;
  });
  announce(core, pending);
  return outcomes;
}

/** The batch's state before a group is placed, and how to go back to it. */
function snapshot(
  mailboxes: Map<number, MailboxState>,
  folders: Map<string, FolderState>,
  messages: MessageRow[],
  changes: ChangeRow[],
  pending: Pending[],
  blobs: Map<string, { item: Item; refs: number }>,
): { restore(): void } {
  const m = [...mailboxes.values()].map((x) => ({ x, copy: { ...x } }));
  const f = [...folders.values()].map((x) => ({ x, copy: { ...x } }));
  const b = new Map([...blobs].map(([k, v]) => [k, v.refs]));
  const lengths = [messages.length, changes.length, pending.length] as const;
  return {
    restore() {
      for (const { x, copy } of m) Object.assign(x, copy);
      for (const { x, copy } of f) Object.assign(x, copy);
      for (const [k, v] of [...blobs]) {
        const refs = b.get(k);
        if (refs === undefined) blobs.delete(k);
        else v.refs = refs;
      }
      messages.length = lengths[0];
      changes.length = lengths[1];
      pending.length = lengths[2];
    },
  };
}

/** The mailbox columns mailboxState reads, and a folder's (its mailbox_id is the mailbox's id). */
const MAILBOX_COLUMNS = ['id', 'deleted_at', 'quota_bytes', 'used_bytes', 'highest_modseq', 'last_uid_validity'] as const;
const FOLDER_COLUMNS = ['id', 'path', 'special_use', 'subscribed', 'uid_validity', 'uid_next', 'highest_modseq', 'created_at'] as const;
const TARGET_COLUMNS = [...MAILBOX_COLUMNS.map((c) => `m.${c} AS m_${c}`), ...FOLDER_COLUMNS.map((c) => `f.${c} AS f_${c}`)].join(', ');

type JoinedRow = Record<string, number | string | null>;
/** The `columns` of a joined row read under `prefix`, by their own names. */
function columnsOf<T>(row: JoinedRow, prefix: string, columns: readonly string[]): T {
  return Object.fromEntries(columns.map((c) => [c, row[`${prefix}${c}`]])) as T;
}

/**
 * The mailboxes and those of their folders named in `paths`, read in one statement (a mailbox row per
 * folder found, or one with no folder): a batch's state before it is placed.
 */
async function loadTargets(trx: Tx, mailboxIds: number[], paths: string[]): Promise<Array<{ mailbox: MailboxState; folder: FolderRow | null }>> {
  const rows = await selectIn<JoinedRow, number>(mailboxIds, (c) =>
    trx.raw(
      `SELECT ${TARGET_COLUMNS} FROM mailboxes m LEFT JOIN mail_folders f ON f.mailbox_id = m.id AND f.path IN (${placeholders(paths.length)}) WHERE m.id IN (${placeholders(c.length)})`,
      [...paths, ...c],
    ),
  );
  return rows.map((r) => ({
    mailbox: mailboxState(columnsOf<Pick<MailboxRow, (typeof MAILBOX_COLUMNS)[number]>>(r, 'm_', MAILBOX_COLUMNS)),
    folder: r.f_id === null ? null : { ...columnsOf<Omit<FolderRow, 'mailbox_id'>>(r, 'f_', FOLDER_COLUMNS), mailbox_id: r.m_id as number },
  }));
}

/** Decides one item against the batch's in-memory counters; all its targets or none (unless `skip`). */
async function place(
  core: Core,
  trx: Tx,
  item: Item,
  mailboxes: Map<number, MailboxState>,
  folders: Map<string, FolderState>,
  messages: MessageRow[],
  changes: ChangeRow[],
  pending: Pending[],
  blobs: Map<string, { item: Item; refs: number }>,
): Promise<StoredCopy[]> {
  // 1. every target's mailbox and folder
  const resolved: Array<{ m: MailboxState; f: FolderState; flags: string[] }> = [];
  for (const t of item.targets) {
    const m = mailboxes.get(t.mailboxId);
    if (!m || m.deleted) throw new MailStoreError(`Mailbox ${t.mailboxId} not found`, 'not_found');
    let f = folders.get(folderKey(m.id, t.path));
    if (!f) {
      if (!item.createFolders) throw new MailStoreError(`Folder '${t.path}' does not exist`, 'not_found');
      const row = await insertFolder(core, trx, m, t.path, pending);
      f = { row, uidNext: row.uid_next, modseq: row.highest_modseq, dirty: false };
      folders.set(folderKey(m.id, t.path), f);
      // Parents created with it are not in the map; a later target naming one reads it from the table.
      for (const r of (await trx('mail_folders').where({ mailbox_id: m.id }).whereIn('path', item.targets.map((x) => x.path))) as FolderRow[]) {
        if (!folders.has(folderKey(m.id, r.path))) folders.set(folderKey(m.id, r.path), { row: r, uidNext: r.uid_next, modseq: r.highest_modseq, dirty: false });
      }
    }
    resolved.push({ m, f, flags: t.flags });
  }
  // 2. quota (two targets in one mailbox count twice)
  const adding = new Map<number, number>();
  const keep = resolved.filter(({ m }) => {
    const add = (adding.get(m.id) ?? 0) + item.size;
    if (overQuota(m, add)) {
      if (item.onQuota === 'fail') throw new MailStoreError('Mailbox is over quota', 'quota_exceeded');
      return false;
    }
    adding.set(m.id, add);
    return true;
  });
  // 3. UIDs, MODSEQs, rows
  const copies: StoredCopy[] = [];
  for (const { m, f, flags } of keep) {
    const modseq = nextModseq(m);
    const uid = f.uidNext++;
    f.modseq = modseq;
    f.dirty = true;
    m.used += item.size;
    messages.push({ folder_id: f.row.id, uid, modseq, flags: flags.join(' '), internal_date: item.internalDate, size: item.size, blob_id: item.blobId, summary: item.summary, sort_keys: item.sortKeys, saved_ms: core.clock.now().getTime() });
    const change = { modseq, folderId: f.row.id, kind: 'append' as const, uid };
    changes.push(changeRow(m.id, change, core.clock.now().getTime()));
    pending.push({ mailboxId: m.id, change });
    copies.push({ mailboxId: m.id, folderId: f.row.id, uidValidity: f.row.uid_validity, uid });
  }
  const blob = blobs.get(item.blobId);
  if (blob) blob.refs += copies.length;
  else blobs.set(item.blobId, { item, refs: copies.length });
  return copies;
}
