// Group commit of the changes to stored messages: flags (STORE, FETCH's implicit \Seen), COPY, MOVE, EXPUNGE and
// the \Recent claims of SELECT. The calls made while the previous batch's transaction runs share the next one
// (db/batcher.ts Batcher), as new messages do in delivery.ts:
// - one read of the folders and their mailboxes, one of the message rows the batch names (and, for an EXPUNGE of
//   every \Deleted message, those of the folder), at once;
// - the operations applied one after another to that state in memory, in the order they were called, each
//   exactly as if it ran alone: each takes its own MODSEQ of its mailbox (so MODSEQs stay strictly increasing per
//   mailbox, one per operation, and UNCHANGEDSINCE sees the operations before it in the batch), and one that
//   fails on its own terms (a folder gone, quota) fails alone with nothing written;
// - the writes of them all sent as one script with the COMMIT (db/script.ts): a batch is three trips to SQLite's
//   thread (BEGIN, the reads, the script) however many sessions it serves, where each operation was a transaction
//   of eight to twelve statements through knex;
// - the changes announced after the commit, in the order of the operations.
import { Batcher, insertRows, updateFromValues } from '../db/batcher.js';
import { placeholders, queryRows, settleAll, type Tx } from '../db/index.js';
import { commitScript, openScript, write } from '../db/script.js';
import { applyFlags, encodeFlags, sameFlags } from './flags.js';
import { announce, changeRow, mailboxState, nowIso, overQuota, toMeta, type ChangeRow, type Core, type MailboxState, type MessageRow, type Pending } from './rows.js';
import { MAX_VANISHED_ROWS } from './vanished.js';
import { MailStoreError, type Change, type FlagMode, type FlagUpdate } from './types.js';

export type MessageOp =
  | { kind: 'flags'; folderId: number; uids: number[]; mode: FlagMode; flags: string[]; unchangedSince?: number }
  | { kind: 'transfer'; folderId: number; uids: number[]; toFolderId: number; move: boolean }
  | { kind: 'expunge'; folderId: number; uids?: number[] }
  | { kind: 'claim'; folderId: number; lastUid: number };

type Transferred = { uidValidity: number; pairs: Array<[number, number]> };
type Outcome = { value: FlagUpdate | Transferred | number[] | number } | { error: MailStoreError };

/** A message row as the batch knows it (the columns of MessageMeta but the summary: META_COLUMNS). */
type Row = Required<Omit<MessageRow, 'summary' | 'sort_keys'>>;

interface FolderState {
  id: number;
  mailboxId: number;
  uidValidity: number;
  uidNext: number;
  highestModseq: number;
  recentUid: number;
  /** Tombstone rows before the batch (read only for folders the batch expunges from). */
  vanishedRows: number;
  /** UIDs the batch expunged from it (for the tombstones' pruning). */
  expunged: number;
  dirty: boolean;
}

/** What a batch reads and changes, in memory; written once at the end. */
interface BatchState {
  folders: Map<number, FolderState>;
  mailboxes: Map<number, MailboxState>;
  /** Per folder, the rows read or made by the batch: every row the batch names, and every \Deleted one of a folder expunged in full. */
  rows: Map<number, Map<number, Row>>;
  /** Rows whose flags the batch changed (written at the end, final values). */
  changedRows: Set<Row>;
  changes: ChangeRow[];
  pending: Pending[];
  at: number;
}

const ROW_COLUMNS = 'folder_id, uid, modseq, flags, internal_date, size, blob_id, saved_ms';
/** IN lists of at most this many values per statement. */
const CHUNK = 5_000;
/** VALUES rows per statement (a compound SELECT of more than 500 terms is refused). */
const VALUES_CHUNK = 500;

export type SubmitOp = <T>(op: MessageOp) => Promise<T>;

const writers = new WeakMap<Core, SubmitOp>();

/** The store's one writer of message changes (messages.ts and folders.ts share it); answers what the operation answers. */
export function messageWriterOf(core: Core): SubmitOp {
  let submit = writers.get(core);
  if (!submit) {
    const batcher = new Batcher<MessageOp, Outcome>((ops) => runBatch(core, ops));
    submit = async <T>(op: MessageOp): Promise<T> => {
      const outcome = await batcher.submit(op);
      if ('error' in outcome) throw outcome.error;
      return outcome.value as T;
    };
    writers.set(core, submit);
  }
  return submit;
}

async function runBatch(core: Core, ops: MessageOp[]): Promise<Outcome[]> {
  const state: BatchState = {
    folders: new Map(),
    mailboxes: new Map(),
    rows: new Map(),
    changedRows: new Set(),
    changes: [],
    pending: [],
    at: core.clock.now().getTime(),
  };
  const outcomes = await core.db.transaction(async (trx) => {
    await load(trx, ops, state);
    openScript(trx);
    const out: Outcome[] = [];
    for (const op of ops) {
      try {
        out.push({ value: await apply(trx, state, op) });
      } catch (err) {
        if (!(err instanceof MailStoreError)) throw err;
        out.push({ error: err });
      }
    }
    await flush(core, trx, state);
    await commitScript(trx);
    return out;
  });
  announce(core, state.pending);
  return outcomes;
}

// ---- reading the batch's state ----

async function load(trx: Tx, ops: MessageOp[], state: BatchState): Promise<void> {
  const folderIds = new Set<number>();
  const named = new Map<number, Set<number>>();
  const expungeAll = new Set<number>();
  const expunging = new Set<number>();
  for (const op of ops) {
    folderIds.add(op.folderId);
    if (op.kind === 'transfer') folderIds.add(op.toFolderId);
    if (op.kind === 'claim') continue;
    if (op.kind === 'expunge' || (op.kind === 'transfer' && op.move)) expunging.add(op.folderId);
    if (op.kind === 'expunge' && !op.uids) {
      expungeAll.add(op.folderId);
      continue;
    }
    let set = named.get(op.folderId);
    if (!set) named.set(op.folderId, (set = new Set()));
    for (const uid of op.uids!) set.add(uid);
  }
  const ids = [...folderIds];
  const reads: Array<Promise<unknown>> = [
    queryRows<Record<string, number | string | null>>(
      trx,
      `SELECT f.id, f.mailbox_id, f.uid_validity, f.uid_next, f.highest_modseq AS f_modseq, f.recent_uid,
              m.deleted_at, m.quota_bytes, m.used_bytes, m.highest_modseq, m.last_uid_validity
         FROM mail_folders f JOIN mailboxes m ON m.id = f.mailbox_id WHERE f.id IN (${placeholders(ids.length)})`,
      ids,
    ),
  ];
  const rowReads: Array<Promise<Row[]>> = [];
  for (const [folderId, uids] of named) {
    const list = [...uids];
    for (let i = 0; i < list.length; i += CHUNK) {
      const chunk = list.slice(i, i + CHUNK);
      rowReads.push(queryRows<Row>(trx, `SELECT ${ROW_COLUMNS} FROM mail_messages WHERE folder_id = ? AND uid IN (${placeholders(chunk.length)})`, [folderId, ...chunk]));
    }
  }
  for (const folderId of expungeAll) {
    rowReads.push(
      queryRows<Row>(trx, `SELECT ${ROW_COLUMNS} FROM mail_messages WHERE folder_id = ? AND instr(' ' || flags || ' ', ' \\Deleted ') > 0`, [folderId]),
    );
  }
  const vanished = [...expunging];
  const vanishedRead = vanished.length
    ? queryRows<{ folder_id: number; n: number }>(
        trx,
        `SELECT folder_id, count(*) AS n FROM mail_vanished WHERE folder_id IN (${placeholders(vanished.length)}) GROUP BY folder_id`,
        vanished,
      )
    : Promise.resolve([]);
  const [folderRows, vanishedCounts, ...rowSets] = (await settleAll([...reads, vanishedRead, ...rowReads])) as [
    Array<Record<string, number | string | null>>,
    Array<{ folder_id: number; n: number }>,
    ...Row[][],
  ];
  const counts = new Map(vanishedCounts.map((r) => [r.folder_id, r.n]));
  for (const r of folderRows) {
    const mailboxId = r.mailbox_id as number;
    state.folders.set(r.id as number, {
      id: r.id as number,
      mailboxId,
      uidValidity: r.uid_validity as number,
      uidNext: r.uid_next as number,
      highestModseq: r.f_modseq as number,
      recentUid: (r.recent_uid as number | null) ?? 0,
      vanishedRows: counts.get(r.id as number) ?? 0,
      expunged: 0,
      dirty: false,
    });
    if (!state.mailboxes.has(mailboxId)) {
      state.mailboxes.set(
        mailboxId,
        mailboxState({
          id: mailboxId,
          deleted_at: r.deleted_at as string | null,
          quota_bytes: r.quota_bytes as number,
          used_bytes: r.used_bytes as number,
          highest_modseq: r.highest_modseq as number,
          last_uid_validity: r.last_uid_validity as number,
        }),
      );
    }
  }
  for (const set of rowSets) for (const row of set) rowsOf(state, row.folder_id).set(row.uid, row);
}

function rowsOf(state: BatchState, folderId: number): Map<number, Row> {
  let rows = state.rows.get(folderId);
  if (!rows) state.rows.set(folderId, (rows = new Map()));
  return rows;
}

function folderOf(state: BatchState, folderId: number): FolderState {
  const f = state.folders.get(folderId);
  if (!f) throw new MailStoreError(`Folder ${folderId} not found`, 'not_found');
  return f;
}

function mailboxOf(state: BatchState, mailboxId: number): MailboxState {
  const m = state.mailboxes.get(mailboxId);
  if (!m || m.deleted) throw new MailStoreError(`Mailbox ${mailboxId} not found`, 'not_found');
  return m;
}

/** The existing rows among `uids` of a folder, in UID order. */
function rowsNamed(state: BatchState, folderId: number, uids: number[]): Row[] {
  const rows = state.rows.get(folderId);
  if (!rows) return [];
  const out: Row[] = [];
  for (const uid of new Set(uids)) {
    const row = rows.get(uid);
    if (row) out.push(row);
  }
  return out.sort((a, b) => a.uid - b.uid);
}

function nextModseq(m: MailboxState, f: FolderState): number {
  m.dirty = true;
  f.dirty = true;
  f.highestModseq = ++m.modseq;
  return m.modseq;
}

function record(state: BatchState, mailboxId: number, change: Change): void {
  state.changes.push(changeRow(mailboxId, change, state.at));
  state.pending.push({ mailboxId, change });
}

// ---- the operations (each validates before it changes anything: a MailStoreError leaves the state as it was) ----

async function apply(trx: Tx, state: BatchState, op: MessageOp): Promise<FlagUpdate | Transferred | number[] | number> {
  switch (op.kind) {
    case 'flags':
      return setFlags(state, op);
    case 'transfer':
      return transfer(trx, state, op);
    case 'expunge': {
      const f = folderOf(state, op.folderId);
      const m = mailboxOf(state, f.mailboxId);
      const rows = op.uids
        ? rowsNamed(state, f.id, op.uids)
        : [...(state.rows.get(f.id)?.values() ?? [])].filter((r) => hasDeleted(r.flags)).sort((a, b) => a.uid - b.uid);
      if (rows.length === 0) return [];
      await remove(trx, state, m, f, rows, nextModseq(m, f));
      return rows.map((r) => r.uid);
    }
    case 'claim': {
      // The first UID no session has seen yet moves past `lastUid`; answers where it was (a folder gone: 0).
      const f = state.folders.get(op.folderId);
      if (!f) return 0;
      const from = f.recentUid;
      if (op.lastUid >= from) {
        f.recentUid = op.lastUid + 1;
        f.dirty = true;
      }
      return from;
    }
  }
}

const hasDeleted = (flags: string) => ` ${flags} `.includes(' \\Deleted ');

function setFlags(state: BatchState, op: Extract<MessageOp, { kind: 'flags' }>): FlagUpdate {
  const f = folderOf(state, op.folderId);
  const m = mailboxOf(state, f.mailboxId);
  const modified: number[] = [];
  const changed: Array<{ row: Row; flags: string[] }> = [];
  for (const row of rowsNamed(state, f.id, op.uids)) {
    // RFC 7162 §3.2: a message changed after UNCHANGEDSINCE is not touched and is reported as MODIFIED.
    if (op.unchangedSince !== undefined && row.modseq > op.unchangedSince) {
      modified.push(row.uid);
      continue;
    }
    const current = row.flags ? row.flags.split(' ') : [];
    const next = applyFlags(current, op.mode, op.flags);
    if (!sameFlags(current, next)) changed.push({ row, flags: next });
  }
  if (changed.length === 0) return { updated: [], modified };
  const modseq = nextModseq(m, f);
  const updated = [];
  for (const { row, flags } of changed) {
    row.flags = encodeFlags(flags);
    row.modseq = modseq;
    state.changedRows.add(row);
    record(state, m.id, { modseq, folderId: f.id, kind: 'flags', uid: row.uid, flags });
    updated.push(toMeta({ ...row, summary: undefined }));
  }
  return { updated, modified };
}

async function transfer(trx: Tx, state: BatchState, op: Extract<MessageOp, { kind: 'transfer' }>): Promise<Transferred> {
  const src = folderOf(state, op.folderId);
  const dest = folderOf(state, op.toFolderId);
  const srcBox = mailboxOf(state, src.mailboxId);
  const destBox = mailboxOf(state, dest.mailboxId);
  const rows = rowsNamed(state, src.id, op.uids);
  if (rows.length === 0) return { uidValidity: dest.uidValidity, pairs: [] };
  // A move into the folder the messages are in is allowed, as COPY into it is (RFC 3501 §6.4.7): they get new
  // UIDs at its end and the old ones are expunged (RFC 6851 §3: COPY, then expunge the originals). mbsync with a
  // Trash folder moves a \Deleted message of the Trash "to the Trash". A move inside one mailbox does not change
  // its usage: no quota check.
  const total = rows.reduce((n, r) => n + r.size, 0);
  if (!(op.move && srcBox === destBox) && overQuota(destBox, total)) throw new MailStoreError('Mailbox is over quota', 'quota_exceeded');
  const modseq = nextModseq(destBox, dest);
  destBox.used += total;
  const pairs: Array<[number, number]> = [];
  const copies: Array<[number, number, string]> = [];
  const destRows = rowsOf(state, dest.id);
  for (const r of rows) {
    const uid = dest.uidNext++;
    pairs.push([r.uid, uid]);
    copies.push([r.uid, uid, r.flags]);
    destRows.set(uid, { ...r, folder_id: dest.id, uid, modseq, saved_ms: state.at });
    record(state, destBox.id, { modseq, folderId: dest.id, kind: 'append', uid });
  }
  // The copies take the sources' columns from their rows (summary and sort keys are not read into the batch).
  for (let i = 0; i < copies.length; i += VALUES_CHUNK) {
    const chunk = copies.slice(i, i + VALUES_CHUNK);
    await write(
      trx,
      `INSERT INTO mail_messages (folder_id, uid, modseq, flags, internal_date, size, blob_id, summary, sort_keys, saved_ms)
       SELECT ?, v.column2, ?, v.column3, m.internal_date, m.size, m.blob_id, m.summary, m.sort_keys, ?
         FROM (VALUES ${chunk.map(() => '(?, ?, ?)').join(', ')}) AS v JOIN mail_messages m ON m.folder_id = ? AND m.uid = v.column1
        ORDER BY v.column2`,
      [dest.id, modseq, state.at, ...chunk.flat(), src.id],
    );
  }
  if (op.move) await remove(trx, state, srcBox, src, rows, srcBox === destBox ? modseq : nextModseq(srcBox, src));
  return { uidValidity: dest.uidValidity, pairs };
}

/**
 * Deletes rows (UID order) of one folder at `modseq`: their bytes leave the quota (their sources' reference counts
 * follow by trigger, migration 006), an expunge change each, and their tombstones (vanished.ts): a row per run of
 * UIDs with no message left between them, worked out by SQLite right after the delete (the runs are those of the
 * UIDs sharing the greatest UID left below them).
 */
async function remove(trx: Tx, state: BatchState, m: MailboxState, f: FolderState, rows: Row[], modseq: number): Promise<void> {
  const rowMap = state.rows.get(f.id)!;
  for (const r of rows) {
    m.used -= r.size;
    rowMap.delete(r.uid);
    state.changedRows.delete(r);
    record(state, m.id, { modseq, folderId: f.id, kind: 'expunge', uid: r.uid });
  }
  m.dirty = true;
  f.dirty = true;
  f.highestModseq = Math.max(f.highestModseq, modseq);
  f.expunged += rows.length;
  const uids = rows.map((r) => r.uid);
  for (let i = 0; i < uids.length; i += CHUNK) {
    const chunk = uids.slice(i, i + CHUNK);
    await write(trx, `DELETE FROM mail_messages WHERE folder_id = ? AND uid IN (${placeholders(chunk.length)})`, [f.id, ...chunk]);
  }
  if (uids.length === 1) {
    await write(trx, 'INSERT INTO mail_vanished (folder_id, modseq, first_uid, last_uid) VALUES (?, ?, ?, ?)', [f.id, modseq, uids[0], uids[0]]);
    return;
  }
  for (let i = 0; i < uids.length; i += VALUES_CHUNK) {
    const chunk = uids.slice(i, i + VALUES_CHUNK);
    await write(
      trx,
      `INSERT INTO mail_vanished (folder_id, modseq, first_uid, last_uid)
       SELECT ?, ?, min(e.uid), max(e.uid)
         FROM (SELECT v.column1 AS uid, (SELECT max(k.uid) FROM mail_messages k WHERE k.folder_id = ? AND k.uid < v.column1) AS below
                 FROM (VALUES ${chunk.map(() => '(?)').join(', ')}) AS v) AS e
        GROUP BY e.below ORDER BY 3`,
      [f.id, modseq, f.id, ...chunk],
    );
  }
}

// ---- writing the batch's state ----

async function flush(core: Core, trx: Tx, state: BatchState): Promise<void> {
  // Flags: the final value of each changed row, one statement per (folder, flags, MODSEQ).
  const groups = new Map<string, { folderId: number; flags: string; modseq: number; uids: number[] }>();
  for (const row of state.changedRows) {
    const key = `${row.folder_id}\u0000${row.modseq}\u0000${row.flags}`;
    const g = groups.get(key);
    if (g) g.uids.push(row.uid);
    else groups.set(key, { folderId: row.folder_id, flags: row.flags, modseq: row.modseq, uids: [row.uid] });
  }
  for (const g of groups.values()) {
    for (let i = 0; i < g.uids.length; i += CHUNK) {
      const chunk = g.uids.slice(i, i + CHUNK);
      await write(trx, `UPDATE mail_messages SET flags = ?, modseq = ? WHERE folder_id = ? AND uid IN (${placeholders(chunk.length)})`, [g.flags, g.modseq, g.folderId, ...chunk]);
    }
  }
  await insertRows(trx, 'mail_changes', state.changes);
  const folders = [...state.folders.values()].filter((f) => f.dirty);
  await updateFromValues(
    trx,
    'mail_folders',
    ['id'],
    { uid_next: 'v.uid_next', highest_modseq: 'v.highest_modseq', recent_uid: 'v.recent_uid' },
    folders.map((f) => ({ id: f.id, uid_next: f.uidNext, highest_modseq: f.highestModseq, recent_uid: f.recentUid })),
  );
  // A folder past its tombstone limit drops the older half (vanished.ts), here in the same script.
  for (const f of folders) if (f.expunged && f.vanishedRows + f.expunged > MAX_VANISHED_ROWS) await pruneTombstones(trx, f.id);
  const now = nowIso(core);
  await updateFromValues(
    trx,
    'mailboxes',
    ['id'],
    { used_bytes: 'v.used_bytes', highest_modseq: 'v.highest_modseq', last_uid_validity: 'v.last_uid_validity', updated_at: 'v.updated_at' },
    [...state.mailboxes.values()]
      .filter((m) => m.dirty)
      .map((m) => ({ id: m.id, used_bytes: m.used, highest_modseq: m.modseq, last_uid_validity: m.lastUidValidity, updated_at: now })),
  );
}

/** vanished.ts's pruning as statements of the script: past MAX_VANISHED_ROWS, the older half goes and `vanished_modseq` rises. */
async function pruneTombstones(trx: Tx, folderId: number): Promise<void> {
  const count = '(SELECT count(*) FROM mail_vanished WHERE folder_id = ?)';
  await write(
    trx,
    `UPDATE mail_folders SET vanished_modseq = max(vanished_modseq,
        (SELECT max(modseq) FROM (SELECT modseq FROM mail_vanished WHERE folder_id = ? ORDER BY modseq LIMIT ${count} - ?)))
      WHERE id = ? AND ${count} > ?`,
    [folderId, folderId, MAX_VANISHED_ROWS / 2, folderId, folderId, MAX_VANISHED_ROWS],
  );
  await write(trx, 'DELETE FROM mail_vanished WHERE folder_id = ? AND modseq <= (SELECT vanished_modseq FROM mail_folders WHERE id = ?)', [folderId, folderId]);
}
