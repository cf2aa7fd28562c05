// The mail store's contract: the one interface through which the MX listener, SMTP submission, the
// Mailboxes/Inbound API and the IMAP and POP3 servers reach mailboxes, folders and messages. Nothing
// outside src/mailstore/ touches the store's tables. Ids are integers; a mailbox belongs to a team and a
// verified domain of that team.
//
// Consistency model (what IMAP needs):
// - Every folder has a UIDVALIDITY fixed at creation (a new value if a folder of the same path is created
//   again after a delete) and a UIDNEXT; UIDs are strictly ascending within a folder and never reused.
// - Every change to a folder (append, flag change, expunge) takes the mailbox's next MODSEQ (one counter per
//   mailbox, so it is also the change-feed cursor) and is written to the change feed in the same transaction.
// - Raw RFC 5322 sources are stored once, addressed by their SHA-256, and referenced by count.
// - Quota: `usedBytes` sums the sizes of the mailbox's messages (a message in two folders counts twice, as
//   IMAP QUOTA STORAGE does); an append or delivery that would go over it fails with `QuotaExceededError`.

import type { SortKeys } from './sort-keys.js';

export type { SortKeys } from './sort-keys.js';

export type SpecialUse = '\\Sent' | '\\Drafts' | '\\Trash' | '\\Junk' | '\\Archive';

/** The folders every new mailbox gets: INBOX plus one per special use, named as below. */
export const DEFAULT_FOLDERS: ReadonlyArray<{ path: string; specialUse: SpecialUse | null }> = [
  { path: 'INBOX', specialUse: null },
  { path: 'Sent', specialUse: '\\Sent' },
  { path: 'Drafts', specialUse: '\\Drafts' },
  { path: 'Trash', specialUse: '\\Trash' },
  { path: 'Junk', specialUse: '\\Junk' },
  { path: 'Archive', specialUse: '\\Archive' },
];

/** Folder hierarchy delimiter (as IMAP LIST reports it). */
export const FOLDER_DELIMITER = '/';

/** System flags as IMAP spells them; anything else in a flag list is a keyword. */
export const SYSTEM_FLAGS = ['\\Seen', '\\Answered', '\\Flagged', '\\Deleted', '\\Draft'] as const;

export interface MailboxAccount {
  id: number;
  teamId: string;
  domainId: string;
  /** Lower-cased full address; also the IMAP/POP3/SMTP login. */
  address: string;
  displayName: string | null;
  /** Bytes; 0 = unlimited. */
  quotaBytes: number;
  usedBytes: number;
  createdAt: string;
  updatedAt: string;
}

export interface CreateAccountInput {
  teamId: string;
  domainId: string;
  address: string;
  password: string;
  displayName?: string | null;
  quotaBytes?: number;
  /** Refuse with `forbidden` when the team already has this many live accounts (checked in the insert's transaction). */
  maxAccountsPerTeam?: number;
}

export interface Folder {
  id: number;
  mailboxId: number;
  /** Full path with FOLDER_DELIMITER, e.g. `INBOX`, `Projects/2026`. INBOX is always spelled `INBOX`. */
  path: string;
  specialUse: SpecialUse | null;
  uidValidity: number;
  uidNext: number;
  /** Highest MODSEQ of any change in this folder (1 for a new, empty folder). */
  highestModseq: number;
  /** Counts at the time of reading. */
  messages: number;
  unseen: number;
  /** Messages no IMAP session has seen yet (\Recent, RFC 3501 §2.3.2): UIDs from `recentUid` on. */
  recent: number;
  recentUid: number;
  /** Octets of all its messages (IMAP STATUS SIZE, RFC 8438). */
  size: number;
  /** The MAILBOXID (RFC 8474): random, kept across renames, never reused. */
  objectId: string;
}

export interface MessageMeta {
  folderId: number;
  uid: number;
  modseq: number;
  /** System flags and keywords, e.g. ['\\Seen', '$Forwarded']. */
  flags: string[];
  internalDate: Date;
  /** Minutes east of UTC the internal date was given in (an IMAP APPEND's date-time, RFC 3501 §2.3.3); absent: UTC. */
  internalDateZone?: number;
  size: number;
  /** Content address of the raw source (hex SHA-256). */
  blobId: string;
  /** When it was saved into this folder (delivery, append, copy, move); absent for messages stored before that was kept. */
  savedDate?: Date;
  /** The parsed header summary; present only when `listMessages` was asked `withSummary`. */
  summary?: MessageSummary;
}

/**
 * What an IMAP session keeps of a folder it opens (SELECT): the UIDs ascending with each message's MODSEQ
 * (typed arrays: 12 bytes a message), and what SELECT announces. Read from a narrow index, not the rows.
 */
export interface FolderIndex {
  uids: Uint32Array;
  /** MODSEQ of the message at the same index. */
  modseqs: Float64Array;
  /** The first message without \Seen (its UID), or 0. */
  firstUnseenUid: number;
  /** Keywords (non-system flags) some message of the folder has. */
  keywords: string[];
  /** The mailbox's MODSEQ read before the messages: a `changesSince`/`syncChanges` cursor for this snapshot. */
  cursor: number;
}

/** An address of an ENVELOPE field. Groups are flattened into their members (an empty group adds nothing). */
export interface EnvelopeAddress {
  /** The display name as written (MIME encoded-words kept, quotes removed), or null. */
  name: string | null;
  /** `local@domain` as written (may lack a domain for malformed input). */
  address: string;
}

/**
 * What IMAP's ENVELOPE needs, parsed once from the header block when a source is first stored (kept beside
 * the blob), so FETCH 1:* (ENVELOPE) reads no raw sources. Values are raw header values, unfolded, with
 * MIME encoded-words kept (as ENVELOPE sends them), a field whose bytes are not UTF-8 read as Windows-1252
 * (`decodeHeaderBytes` in headers.ts; summaries stored before that hold U+FFFD, and IMAP's FETCH reads such a
 * message's source instead); a missing header is null / []. No defaults are applied (ENVELOPE's "sender and
 * reply-to default to from" is the IMAP writer's job).
 */
export interface MessageSummary {
  date: string | null;
  subject: string | null;
  from: EnvelopeAddress[];
  sender: EnvelopeAddress[];
  replyTo: EnvelopeAddress[];
  to: EnvelopeAddress[];
  cc: EnvelopeAddress[];
  bcc: EnvelopeAddress[];
  inReplyTo: string | null;
  messageId: string | null;
  /** Bytes of the header block including the empty line that ends it: the body starts at this offset. */
  headerSize: number;
  /**
   * Set when an address field uses group syntax (`undisclosed-recipients:;`): the lists above hold the members
   * only, and IMAP's ENVELOPE, which shows groups (RFC 3501 §7.4.2), is built from the source instead.
   */
  groups?: true;
}

/** The part of a message's metadata that changes, its size and content address: what IMAP reads per command. */
export type MessageState = Pick<MessageMeta, 'uid' | 'modseq' | 'flags' | 'size' | 'blobId'>;

/** A message's sort and thread keys (IMAP SORT/THREAD): `keys` null for a row stored without them. */
export interface SortRow {
  uid: number;
  /** INTERNALDATE, ms since the epoch. */
  arrival: number;
  size: number;
  keys: SortKeys | null;
}

/** A message's stored header summary (JSON of a MessageSummary). */
export interface SummaryRow {
  uid: number;
  summaryJson: string;
}

export interface ListOptions {
  /** Only messages with a greater MODSEQ. */
  changedSince?: number;
  /** Include the header summary (`summary`). */
  withSummary?: boolean;
  /** Only these UIDs. */
  uids?: number[];
  /** Only UIDs in [from, to] (one range scan). */
  uidRange?: [number, number];
}

/** An internal date with the zone it was given in, minutes east of UTC (IMAP APPEND's date-time keeps its zone). */
export interface ZonedDate {
  at: Date;
  zone: number;
}

export interface DeliveryTarget {
  mailboxId: number;
  /** Folder path; default INBOX. A missing folder is created. */
  folder?: string;
  flags?: string[];
}

export interface StoredCopy {
  mailboxId: number;
  folderId: number;
  uidValidity: number;
  uid: number;
}

/** What an address on a local domain resolves to. */
export type Resolution =
  | { kind: 'mailboxes'; mailboxIds: number[]; via: 'mailbox' | 'alias' | 'catch-all' }
  | { kind: 'none' };

export type FlagMode = 'add' | 'remove' | 'set';

export interface FlagUpdate {
  /** Messages whose flags were changed (new flags and MODSEQ). */
  updated: MessageMeta[];
  /** UIDs refused by UNCHANGEDSINCE (their MODSEQ is newer): the CONDSTORE MODIFIED set. */
  modified: number[];
}

/** One entry of the change feed; `modseq` is the cursor. */
export type Change =
  | { modseq: number; folderId: number; kind: 'append'; uid: number }
  | { modseq: number; folderId: number; kind: 'flags'; uid: number; flags: string[] }
  | { modseq: number; folderId: number; kind: 'expunge'; uid: number }
  | { modseq: number; folderId: number; kind: 'folder'; change: 'created' | 'deleted' | 'renamed'; /** The path after the change. */ path?: string };

export type ShareAccess = 'read' | 'read-write';

export interface Share {
  ownerId: number;
  targetId: number;
  /** The target mailbox's address. */
  targetAddress: string;
  access: ShareAccess;
  createdAt: string;
}

export interface Alias {
  id: number;
  teamId: string;
  domainId: string;
  /** Lower-cased; `*@domain` is the domain's catch-all. */
  address: string;
  mailboxIds: number[];
  createdAt: string;
}

export interface DeliverOptions {
  internalDate?: Date;
  /**
   * A target whose mailbox is over quota: `fail` (default) refuses the whole call with `quota_exceeded`;
   * `skip` stores the other targets and leaves that one out of the result (the MX answers per recipient).
   */
  onQuota?: 'fail' | 'skip';
}

/** A filter rule (Mailboxes API `PUT /mailboxes/{id}/filters`), applied at delivery in position order. */
export interface FilterRule {
  /** All conditions must hold (an empty list matches every message). */
  conditions: Array<
    | { field: 'from' | 'to' | 'subject'; op: 'contains' | 'equals' | 'matches'; value: string }
    | { field: 'header'; name: string; op: 'contains' | 'equals' | 'matches' | 'exists'; value?: string }
    | { field: 'size'; op: 'gt' | 'lt'; value: number }
  >;
  actions: Array<
    | { type: 'move'; folder: string }
    | { type: 'mark_read' }
    | { type: 'flag' }
    | { type: 'forward'; to: string }
    | { type: 'discard' }
  >;
  /** Stop evaluating later rules after this one matched. */
  stop?: boolean;
}

/** What the filters of one mailbox decided for one message (src/mailstore/filters.ts `planDelivery`). */
export interface DeliveryPlan {
  /** Empty when a rule discarded the message. */
  targets: DeliveryTarget[];
  /** Addresses to forward the message to (the caller sends them through the send path). */
  forwards: string[];
}

export class MailStoreError extends Error {
  override name = 'MailStoreError';
  constructor(
    message: string,
    readonly code: 'not_found' | 'exists' | 'quota_exceeded' | 'invalid' | 'forbidden',
  ) {
    super(message);
  }
}

/**
 * The store (built by `createMailStore` in src/mailstore/index.ts, reachable as `ctx.mailstore`). All methods are async and transactional on their own; a method that changes a folder writes
 * its MODSEQ and change-feed rows in the same transaction and then notifies in-process listeners.
 */
/** One message of `appendAll`. */
export interface AppendInput {
  raw: Buffer;
  flags?: string[];
  internalDate?: Date | ZonedDate;
}

export interface MailStore {
  // Accounts
  createAccount(input: CreateAccountInput): Promise<MailboxAccount>;
  getAccount(id: number): Promise<MailboxAccount | null>;
  findAccountByAddress(address: string): Promise<MailboxAccount | null>;
  /** The account when the password matches (scrypt, constant-time), else null. Deleted accounts never match. */
  authenticate(address: string, password: string): Promise<MailboxAccount | null>;
  setPassword(id: number, password: string): Promise<void>;
  /** Soft delete: the address stops resolving and logging in; messages are removed by retention later. */
  deleteAccount(id: number): Promise<void>;

  /** Mailboxes, aliases and the domain's catch-all, in that order of precedence. */
  resolveAddress(address: string): Promise<Resolution>;

  // Delivery: the raw source is stored once however many targets; one transaction for all targets.
  // Targets naming the same mailbox and folder twice are stored once (flags merged); a missing folder is created.
  // Deliver and append store the source with CRLF line ends (a bare LF or CR becomes CRLF): sizes are the octets sent.
  deliver(raw: Buffer, targets: DeliveryTarget[], opts?: DeliverOptions): Promise<StoredCopy[]>;

  /**
   * False when storing `bytes` more in the mailbox would pass its quota now (the rule `append` and `deliver`
   * apply): a cheap look before a message is received (IMAP answers an APPEND over quota before its literal).
   * Not a reservation: the store decides again when it stores. An unknown or deleted mailbox: true.
   */
  fitsQuota(mailboxId: number, bytes: number): Promise<boolean>;

  // Folders
  listFolders(mailboxId: number): Promise<Folder[]>;
  /** With `counts: false` its message counts are not read (0): SELECT, APPEND and COPY need the folder's state only. */
  getFolder(mailboxId: number, path: string, opts?: { counts?: boolean }): Promise<Folder | null>;
  /** A folder by id (e.g. from a change or a StoredCopy), or null. */
  getFolderById(folderId: number): Promise<Folder | null>;
  /**
   * Creates a folder (and its missing parents), subscribed unless `subscribed: false` (IMAP's CREATE: RFC 3501
   * leaves subscribing to SUBSCRIBE; a folder a filter creates on delivery is subscribed, so clients show it).
   */
  createFolder(mailboxId: number, path: string, opts?: { subscribed?: boolean }): Promise<Folder>;
  /** Deletes the folder and its messages, not its subfolders; INBOX cannot be deleted. */
  deleteFolder(mailboxId: number, path: string): Promise<void>;
  /** Renames a folder and its children; renaming INBOX moves its messages to the new folder and leaves INBOX empty (RFC 3501). */
  renameFolder(mailboxId: number, from: string, to: string): Promise<void>;
  /**
   * Subscribes or unsubscribes a name (RFC 3501 §6.3.6): a name, not a folder, so a name that is no folder can
   * be subscribed and stays subscribed when its folder is deleted or renamed (Dovecot does the same).
   */
  setSubscribed(mailboxId: number, path: string, subscribed: boolean): Promise<void>;
  /** The subscribed names of a mailbox, folders or not, by path. */
  listSubscriptions(mailboxId: number): Promise<string[]>;
  /**
   * Claims \Recent up to `lastUid` for a session (RFC 3501 §2.3.2): moves the folder's first unseen UID past
   * `lastUid` and returns where it was, in one transaction, so the messages from there to `lastUid` are recent
   * for this session and for no other.
   */
  claimRecent(folderId: number, lastUid: number): Promise<number>;

  // Messages
  /** Metadata in UID order; `changedSince` keeps only messages with a greater MODSEQ. */
  listMessages(folderId: number, opts?: ListOptions): Promise<MessageMeta[]>;
  /** Flags, MODSEQ, size and content address of some messages of a folder (UID order), from an index: no message rows read. */
  listStates(folderId: number, opts: { uids?: number[]; uidRange?: [number, number] }): Promise<MessageState[]>;
  /** The stored header summaries of some messages, as JSON text (IMAP reads them only for contents whose ENVELOPE it has not cached). */
  listSummaries(folderId: number, opts: { uids?: number[]; uidRange?: [number, number] }): Promise<SummaryRow[]>;
  /** What IMAP SORT and THREAD order by (RFC 5256): arrival, size and the stored SortKeys of some messages (UID order). */
  listSortKeys(folderId: number, opts: { uids?: number[]; uidRange?: [number, number] }): Promise<SortRow[]>;
  /** UIDs and MODSEQs of a folder, its first unseen message and keywords (IMAP SELECT; no message rows read). */
  folderIndex(folderId: number): Promise<FolderIndex>;
  /**
   * UIDs (ascending) of the folder's messages whose decoded text contains `needle`, case-insensitively, from the
   * full-text index (search-text.ts): IMAP SEARCH BODY (`body`) and TEXT (`text`, headers and MIME headers too).
   */
  searchText(folderId: number, where: 'body' | 'text', needle: string): Promise<number[]>;
  /**
   * Indexes every source not in the full-text index yet (the index job does this in the background; text-index.ts),
   * answers how many it indexed. For tests and tools.
   */
  indexText(): Promise<number>;
  /** The raw source, or null if the message is gone. */
  readMessage(folderId: number, uid: number): Promise<Buffer | null>;
  /** A ZonedDate is stored with its zone (FETCH INTERNALDATE gives it back as written); a Date as UTC. */
  append(mailboxId: number, path: string, raw: Buffer, flags?: string[], internalDate?: Date | ZonedDate): Promise<StoredCopy>;
  /**
   * Several messages into one folder in one transaction (IMAP MULTIAPPEND, RFC 3502): all of them are stored, with
   * ascending UIDs in the order given, or none (the first failure, e.g. quota, is thrown).
   */
  appendAll(mailboxId: number, path: string, messages: AppendInput[]): Promise<StoredCopy[]>;
  setFlags(folderId: number, uids: number[], mode: FlagMode, flags: string[], opts?: { unchangedSince?: number }): Promise<FlagUpdate>;
  /** Copies keep flags; returns [source uid, destination uid] pairs in source order (COPYUID). */
  copy(folderId: number, uids: number[], toFolderId: number): Promise<{ uidValidity: number; pairs: Array<[number, number]> }>;
  /** Copy then expunge from the source, atomically. */
  move(folderId: number, uids: number[], toFolderId: number): Promise<{ uidValidity: number; pairs: Array<[number, number]> }>;
  /**
   * The UIDs of the folder expunged after MODSEQ `modseq` (QRESYNC, RFC 7162 §3.2), as ascending disjoint ranges
   * that may also name UIDs gone earlier or never used. When the tombstones after `modseq` were pruned, every UID
   * below UIDNEXT that no message has now (RFC 7162 §3.2.5.2 lets a server answer more than what vanished).
   */
  vanishedSince(folderId: number, modseq: number): Promise<Array<[number, number]>>;
  /** Removes the given messages (all \Deleted ones when `uids` is omitted); returns the expunged UIDs ascending. */
  expunge(folderId: number, uids?: number[]): Promise<number[]>;

  // Shares and filters (edited through the Mailboxes API; read here by IMAP and delivery)
  /** Mailboxes this mailbox may open through a share, with the access granted. */
  sharedWith(mailboxId: number): Promise<Array<{ owner: MailboxAccount; access: ShareAccess }>>;
  getFilters(mailboxId: number): Promise<FilterRule[]>;

  // Administration (the Mailboxes API's service calls these; additive to the first contract)
  /** Live accounts of a team, newest first, optionally of one domain. */
  listAccounts(query: { teamId: string; domainId?: string; offset: number; limit: number }): Promise<{ accounts: MailboxAccount[]; total: number }>;
  /** Live accounts of a team (for plan caps). */
  countAccounts(teamId: string): Promise<number>;
  updateAccount(id: number, patch: { displayName?: string | null; quotaBytes?: number }): Promise<MailboxAccount>;
  /** Hard-deletes up to `limit` accounts soft-deleted before `deletedBefore` with all they hold; answers how many (for retention). */
  purgeDeletedAccounts(deletedBefore: Date, limit?: number): Promise<number>;
  /** True when some account was soft-deleted before `deletedBefore` (retention's cheap look before it enqueues work). */
  hasDeletedAccounts(deletedBefore: Date): Promise<boolean>;
  /** Shares granted by `ownerId` (who may open this mailbox). */
  listShares(ownerId: number): Promise<Share[]>;
  /** Grants (or changes) `targetId`'s access to `ownerId`'s mailbox. */
  setShare(ownerId: number, targetId: number, access: ShareAccess): Promise<Share>;
  /** False when there was no such share. */
  removeShare(ownerId: number, targetId: number): Promise<boolean>;
  /** Replaces the mailbox's rules (position = index). */
  setFilters(mailboxId: number, rules: FilterRule[]): Promise<void>;
  createAlias(input: { teamId: string; domainId: string; address: string; mailboxIds: number[] }): Promise<Alias>;
  listAliases(query: { teamId: string; offset: number; limit: number }): Promise<{ aliases: Alias[]; total: number }>;
  getAlias(id: number): Promise<Alias | null>;
  deleteAlias(id: number): Promise<void>;

  // Change feed
  /** The changes kept with a MODSEQ above `modseq` (older ones may have been pruned: see `syncChanges`). */
  changesSince(mailboxId: number, modseq: number): Promise<Change[]>;
  /**
   * Like `changesSince`, or null when the feed was pruned past `modseq` (some change after it may be
   * missing): the caller then compares its view with `folderIndex` instead.
   */
  syncChanges(mailboxId: number, modseq: number): Promise<Change[] | null>;
  /**
   * Deletes up to `limit` of the oldest changes written before `before` (all mailboxes; retention), and
   * records per mailbox the highest MODSEQ dropped. Answers how many were deleted.
   */
  pruneChanges(before: Date, limit?: number): Promise<number>;
  /** True when the feed holds a change written before `before` (retention's cheap look). */
  hasChangesBefore(before: Date): Promise<boolean>;
  /** Called after every committed change of the mailbox (in this process); returns an unsubscribe function. */
  onChange(mailboxId: number, listener: (change: Change) => void): () => void;
  /**
   * Called after every change (committed or failed) in this process to what `resolveAddress`,
   * `findAccountByAddress` and `getFilters` answer: accounts created, updated, deleted or purged, aliases
   * created or deleted, filter rules replaced. Not called for usage, MODSEQ or message changes. Returns an
   * unsubscribe function.
   */
  onDirectoryChange(listener: () => void): () => void;
}
