// The store's rows, their mapping to the contract's types, and the small helpers every part of the store
// shares: the MODSEQ counter, UIDVALIDITY, folder paths and counter updates. (Blob reference counts are
// kept by triggers on mail_messages, migration 006.)
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import type { Clock } from '../core/clock.js';
import type { Signal } from '../core/signal.js';
import { placeholders, type Db, type Tx } from '../db/index.js';
import { write } from '../db/script.js';
import { decodeFlags } from './flags.js';
import {
  FOLDER_DELIMITER,
  MailStoreError,
  type Change,
  type Folder,
  type MailboxAccount,
  type MessageMeta,
  type MessageSummary,
  type SpecialUse,
} from './types.js';

export interface MailboxRow {
  id: number;
  team_id: string;
  domain_id: string;
  address: string;
  password_hash: string;
  display_name: string | null;
  quota_bytes: number;
  used_bytes: number;
  highest_modseq: number;
  last_uid_validity: number;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface FolderRow {
  id: number;
  mailbox_id: number;
  path: string;
  special_use: string | null;
  /** Legacy (migration 006): subscriptions are names in mail_subscriptions (migration 032); not read as such. */
  subscribed?: number | boolean;
  uid_validity: number;
  uid_next: number;
  highest_modseq: number;
  /** The first UID no IMAP session has seen yet (\Recent, migration 026). */
  recent_uid: number;
  /** Tombstones (mail_vanished) with a MODSEQ up to this may have been pruned (migration 027). */
  vanished_modseq?: number;
  /** The MAILBOXID (RFC 8474; migration 027). */
  object_id?: string | null;
  created_at: string;
}

export interface MessageRow {
  folder_id: number;
  uid: number;
  modseq: number;
  flags: string;
  internal_date: string;
  size: number;
  blob_id: string;
  /** JSON MessageSummary; selected only when asked for. */
  summary?: string;
  /** JSON SortKeys (sort-keys.ts, migration 029); selected only when asked for. */
  sort_keys?: string | null;
  /** When it was saved into its folder (ms since the epoch; SAVEDATE, migration 027); null before that migration. */
  saved_ms?: number | null;
}

/** The columns of MessageMeta (without the summary). */
export const META_COLUMNS = ['folder_id', 'uid', 'modseq', 'flags', 'internal_date', 'size', 'blob_id', 'saved_ms'] as const;

export interface ChangeRow {
  mailbox_id: number;
  /** When written (ms since the epoch; null for rows older than migration 009). Not part of a Change. */
  created_ms?: number | null;
  modseq: number;
  folder_id: number;
  kind: Change['kind'];
  uid: number | null;
  flags: string | null;
  path: string | null;
}

/** What every part of the store is built from. */
export interface Core {
  db: Db;
  /** Read-only connections beside the writer (src/db/index.ts `readsOf`). */
  reads: Db;
  clock: Clock;
  /** Change notifications, one event name per mailbox id; emitted after commit. */
  feed: EventEmitter;
  /** Emitted after every change to what `resolveAddress` and `getFilters` answer (types.ts `onDirectoryChange`). */
  directory: Signal;
}

/** A change to announce after commit. */
export interface Pending {
  mailboxId: number;
  change: Change;
}

export function announce(core: Core, pending: readonly Pending[]): void {
  for (const p of pending) core.feed.emit(String(p.mailboxId), p.change);
}

export const nowIso = (core: Core) => core.clock.now().toISOString();

/** An RFC 8474 objectid (MAILBOXID): a letter and 24 random hex digits, never reused. */
export function newObjectId(prefix: string): string {
  return prefix + randomBytes(12).toString('hex');
}

export function toAccount(row: MailboxRow): MailboxAccount {
  return {
    id: row.id,
    teamId: row.team_id,
    domainId: row.domain_id,
    address: row.address,
    displayName: row.display_name,
    quotaBytes: row.quota_bytes,
    usedBytes: row.used_bytes,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toFolder(row: FolderRow, counts?: { messages: number; unseen: number; recent: number; size: number }): Folder {
  return {
    id: row.id,
    mailboxId: row.mailbox_id,
    path: row.path,
    specialUse: (row.special_use as SpecialUse | null) ?? null,
    uidValidity: row.uid_validity,
    uidNext: row.uid_next,
    highestModseq: row.highest_modseq,
    messages: counts?.messages ?? 0,
    unseen: counts?.unseen ?? 0,
    recent: counts?.recent ?? 0,
    recentUid: row.recent_uid ?? 0,
    objectId: row.object_id ?? `F${row.id}`,
    size: counts?.size ?? 0,
  };
}

export function toMeta(row: MessageRow): MessageMeta {
  const meta: MessageMeta = {
    folderId: row.folder_id,
    uid: row.uid,
    modseq: row.modseq,
    flags: decodeFlags(row.flags),
    internalDate: new Date(row.internal_date),
    size: row.size,
    blobId: row.blob_id,
  };
  // Stored with the zone it was given in (delivery.ts internalDateText): `…-07:00`.
  const zone = /([+-])(\d\d):(\d\d)$/.exec(row.internal_date);
  if (zone) meta.internalDateZone = (zone[1] === '-' ? -1 : 1) * (Number(zone[2]) * 60 + Number(zone[3]));
  if (row.summary !== undefined) meta.summary = JSON.parse(row.summary) as MessageSummary;
  if (row.saved_ms !== undefined && row.saved_ms !== null) meta.savedDate = new Date(row.saved_ms);
  return meta;
}

export function toChange(row: ChangeRow): Change {
  switch (row.kind) {
    case 'append':
    case 'expunge':
      return { modseq: row.modseq, folderId: row.folder_id, kind: row.kind, uid: row.uid ?? 0 };
    case 'flags':
      return { modseq: row.modseq, folderId: row.folder_id, kind: 'flags', uid: row.uid ?? 0, flags: decodeFlags(row.flags) };
    case 'folder': {
      const change: Change = { modseq: row.modseq, folderId: row.folder_id, kind: 'folder', change: row.flags as 'created' | 'deleted' | 'renamed' };
      if (row.path !== null) change.path = row.path;
      return change;
    }
  }
}

/** The row of a change written at `at` (ms since the epoch, the store's clock). */
export function changeRow(mailboxId: number, change: Change, at: number): ChangeRow {
  const base = { mailbox_id: mailboxId, modseq: change.modseq, folder_id: change.folderId, kind: change.kind, created_ms: at };
  switch (change.kind) {
    case 'append':
    case 'expunge':
      return { ...base, uid: change.uid, flags: null, path: null };
    case 'flags':
      return { ...base, uid: change.uid, flags: change.flags.join(' '), path: null };
    case 'folder':
      return { ...base, uid: null, flags: change.change, path: change.path ?? null };
  }
}

// ---- folder paths ----

const MAX_PATH = 512;

/** Canonical path: INBOX (any case, also as the first segment) spelled `INBOX`; no empty segments. */
export function normalizePath(path: string): string {
  let p = path;
  if (p.endsWith(FOLDER_DELIMITER)) p = p.slice(0, -1);
  if (p.length === 0 || p.length > MAX_PATH || /[\x00-\x1f\x7f]/.test(p)) throw new MailStoreError(`Invalid folder name '${path}'`, 'invalid');
  const parts = p.split(FOLDER_DELIMITER);
  if (parts.some((s) => s.length === 0)) throw new MailStoreError(`Invalid folder name '${path}'`, 'invalid');
  if (parts[0]!.toUpperCase() === 'INBOX') parts[0] = 'INBOX';
  return parts.join(FOLDER_DELIMITER);
}

/** `a/b/c` → [`a`, `a/b`]. */
export function parentsOf(path: string): string[] {
  const parts = path.split(FOLDER_DELIMITER);
  const out: string[] = [];
  for (let i = 1; i < parts.length; i++) out.push(parts.slice(0, i).join(FOLDER_DELIMITER));
  return out;
}

// ---- the per-mailbox counters ----

/** In-memory view of a mailbox's counters inside one transaction; written back by `saveMailboxes`. */
export interface MailboxState {
  id: number;
  deleted: boolean;
  quota: number;
  used: number;
  modseq: number;
  lastUidValidity: number;
  dirty: boolean;
}

export function mailboxState(row: Pick<MailboxRow, 'id' | 'deleted_at' | 'quota_bytes' | 'used_bytes' | 'highest_modseq' | 'last_uid_validity'>): MailboxState {
  return {
    id: row.id,
    deleted: row.deleted_at !== null,
    quota: row.quota_bytes,
    used: row.used_bytes,
    modseq: row.highest_modseq,
    lastUidValidity: row.last_uid_validity,
    dirty: false,
  };
}

/** The quota rule, in one place: adding `bytes` to the mailbox would pass its quota (0 = unlimited). */
export function overQuota(m: Pick<MailboxState, 'quota' | 'used'>, bytes: number): boolean {
  return m.quota > 0 && m.used + bytes > m.quota;
}

export async function loadMailbox(trx: Tx, mailboxId: number): Promise<MailboxState> {
  const row = (await trx('mailboxes').where({ id: mailboxId }).first()) as MailboxRow | undefined;
  if (!row || row.deleted_at !== null) throw new MailStoreError(`Mailbox ${mailboxId} not found`, 'not_found');
  return mailboxState(row);
}

export function nextModseq(m: MailboxState): number {
  m.dirty = true;
  return ++m.modseq;
}

/** Seconds since the epoch at creation, kept strictly ascending per mailbox. */
export function nextUidValidity(core: Core, m: MailboxState): number {
  m.dirty = true;
  m.lastUidValidity = Math.max(Math.floor(core.clock.now().getTime() / 1000), m.lastUidValidity + 1);
  return m.lastUidValidity;
}

/** `UPDATE table SET col = CASE id WHEN … END, … WHERE id IN (…)`: many rows' counters in one statement each chunk (held for the transaction's write script if it has one: db/script.ts `write`). */
export async function updateById(
  trx: Tx | Db,
  table: string,
  rows: Array<{ id: number | string; values: Record<string, number | string> }>,
  columns: string[],
): Promise<void> {
  const perRow = 1 + columns.length * 2;
  const size = Math.max(1, Math.floor(30_000 / perRow));
  for (let i = 0; i < rows.length; i += size) {
    const chunk = rows.slice(i, i + size);
    const bindings: Array<number | string> = [];
    const sets = columns.map((col) => {
      const whens = chunk.map((r) => {
        bindings.push(r.id, r.values[col]!);
        return 'WHEN ? THEN ?';
      });
      return `"${col}" = CASE id ${whens.join(' ')} END`;
    });
    for (const r of chunk) bindings.push(r.id);
    await write(trx, `UPDATE "${table}" SET ${sets.join(', ')} WHERE id IN (${placeholders(chunk.length)})`, bindings);
  }
}

export async function saveMailboxes(core: Core, trx: Tx, states: Iterable<MailboxState>): Promise<void> {
  const now = nowIso(core);
  const dirty = [...states].filter((m) => m.dirty);
  if (dirty.length === 0) return;
  await updateById(
    trx,
    'mailboxes',
    dirty.map((m) => ({ id: m.id, values: { used_bytes: m.used, highest_modseq: m.modseq, last_uid_validity: m.lastUidValidity, updated_at: now } })),
    ['used_bytes', 'highest_modseq', 'last_uid_validity', 'updated_at'],
  );
}

/** Inserts rows in chunks under SQLite's bound-variable limit. */
export async function insertRows(trx: Tx, table: string, rows: object[]): Promise<void> {
  if (rows.length === 0) return;
  const perRow = Object.keys(rows[0]!).length;
  const size = Math.max(1, Math.floor(30_000 / perRow));
  for (let i = 0; i < rows.length; i += size) await trx(table).insert(rows.slice(i, i + size));
}

/** `whereIn` over a long list, chunked; answers the concatenated rows. */
export async function selectIn<T, K extends number | string>(list: readonly K[], query: (chunk: K[]) => Knex.QueryBuilder | PromiseLike<unknown>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < list.length; i += 5_000) out.push(...((await query(list.slice(i, i + 5_000))) as T[]));
  return out;
}

export function unique<T>(list: Iterable<T>): T[] {
  return [...new Set(list)];
}

// ---- folders inside a transaction ----

export async function folderById(q: Tx | Db, folderId: number): Promise<FolderRow> {
  const row = (await q('mail_folders').where({ id: folderId }).first()) as FolderRow | undefined;
  if (!row) throw new MailStoreError(`Folder ${folderId} not found`, 'not_found');
  return row;
}

/**
 * Creates `path` (and any missing parents) in the mailbox: a new UIDVALIDITY each, a `folder created`
 * change each. Answers the new row of `path`. The caller saves the mailbox state.
 */
export async function insertFolder(
  core: Core,
  trx: Tx,
  m: MailboxState,
  path: string,
  pending: Pending[],
  specialUse: SpecialUse | null = null,
  subscribed = true,
): Promise<FolderRow> {
  const existing = new Set(
    ((await trx('mail_folders').where({ mailbox_id: m.id }).whereIn('path', [...parentsOf(path), path]).select('path')) as Array<{ path: string }>).map(
      (r) => r.path,
    ),
  );
  if (existing.has(path)) throw new MailStoreError(`Folder '${path}' already exists`, 'exists');
  const now = nowIso(core);
  let created: FolderRow | null = null;
  for (const p of [...parentsOf(path).filter((x) => !existing.has(x)), path]) {
    const row = {
      mailbox_id: m.id,
      path: p,
      special_use: p === path ? specialUse : null,
      subscribed,
      uid_validity: nextUidValidity(core, m),
      uid_next: 1,
      highest_modseq: 1,
      recent_uid: 0,
      vanished_modseq: 0,
      object_id: newObjectId('F'),
      created_at: now,
    };
    const [id] = (await trx('mail_folders').insert(row)) as number[];
    // Subscriptions are names (mail_subscriptions, migration 032); `subscribed` above is the legacy column.
    if (subscribed) await trx.raw('INSERT OR IGNORE INTO mail_subscriptions (mailbox_id, path, created_at) VALUES (?, ?, ?)', [m.id, p, now]);
    const modseq = nextModseq(m);
    const change: Change = { modseq, folderId: id!, kind: 'folder', change: 'created', path: p };
    await trx('mail_changes').insert(changeRow(m.id, change, core.clock.now().getTime()));
    pending.push({ mailboxId: m.id, change });
    created = { ...row, id: id! };
  }
  return created!;
}
