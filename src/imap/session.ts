// One IMAP session's state (RFC 3501 §3): the state machine, the logged-in account, the selected mailbox
// as this client knows it (sequence numbers ↔ UIDs, flags, MODSEQs), and how changes made elsewhere reach
// the client (§5.2, §7.4.1): EXISTS and FETCH FLAGS whenever a response may carry them, EXPUNGE only
// when no FETCH/STORE/SEARCH (or their UID forms) is running. Handlers see this class through its
// public members; the connection owns the socket.
import type { Logger } from '../core/logger.js';
import type { NetworkList } from '../core/trusted-networks.js';
import type { Change, FolderIndex, MailboxAccount, MailStore, MessageMeta, ShareAccess } from '../mailstore/types.js';
import { FOLDER_DELIMITER } from '../mailstore/types.js';
import { formatSet, isSavedResult, resolveSeqNumbers, resolveUids, type SequenceSet } from './protocol/sequence.js';
import type { SummaryCache } from './summary-cache.js';

export type SessionState = 'not-authenticated' | 'authenticated' | 'selected' | 'logout';

/** Where failed logins are counted (the SMTP submission listener shares the same object). */
export interface LoginGuard {
  loginBlocked(ip: string, username: string): boolean;
  loginFailed(ip: string, username: string): void;
}

export interface SessionDeps {
  store: MailStore;
  guard: LoginGuard;
  log: Logger;
  hostname: string;
  version: string;
  summaries: SummaryCache;
  /** Clients that may log in without TLS (MAIL_TRUSTED_NETWORKS); none when absent. */
  trustedNetworks?: NetworkList;
}

/** A mailbox name resolved to a folder of some account (the user's own, or one shared with them). */
export interface MailboxTarget {
  mailboxId: number;
  /** Folder path in the owning account. */
  path: string;
  /** The name the client uses. */
  name: string;
  access: 'owner' | ShareAccess;
}

/** The client's side of the protocol as a session needs it. */
export interface ClientChannel {
  /** Writes protocol text or bytes as one unit (a response line is never split by another writer). */
  write(data: string | Buffer): Promise<void>;
  /** Sends `+ text` and waits for the client's next line (AUTHENTICATE, IDLE); null if the client left. */
  continuation(text: string): Promise<string | null>;
  /** Peer address (failed-login accounting). */
  remoteAddress: string;
  secure: boolean;
  /** On MAIL_TRUSTED_NETWORKS: may log in without TLS. */
  trusted: boolean;
  /** COMPRESS=DEFLATE is active (RFC 4978). */
  compressed?: boolean;
}

/** RFC 2342: the shared-namespace prefix for mailboxes other accounts share with this one. */
export const SHARED_PREFIX = 'Shared';

/**
 * The selected folder as this client knows it: UIDs in sequence-number order (index = seq - 1, expunged
 * ones not yet announced included) and the MODSEQ of each message as last reported to it, in typed arrays
 * (12 bytes a message; 10,000 messages ≈ 120 KB a session). Flags, sizes and summaries are not kept: the
 * commands that need them read them from the store.
 */
export class SelectedMailbox {
  private uidArr: Uint32Array;
  private modArr: Float64Array;
  private n: number;
  /** Expunged in the store, not yet announced with EXPUNGE. */
  readonly pendingExpunge = new Set<number>();
  /**
   * The messages that are \Recent in this session (RFC 3501 §2.3.2): those it claimed from the folder (a read-write
   * session; `Session.claimRecent`), or, read-only (EXAMINE), those no session has claimed, as of its SELECT.
   */
  readonly recent = new Set<number>();
  /**
   * The folder's first unclaimed UID as this session last knew it (at SELECT, then past each claim); read-only,
   * the messages from there on count as recent here.
   */
  recentFrom = 0;
  /**
   * SEARCHRES (RFC 5182): the UIDs of the last `SEARCH RETURN (SAVE)`, what `$` stands for; empty after SELECT and
   * before any SAVE; an expunged message leaves it as its EXPUNGE is sent (§2.1).
   */
  readonly saved = new Set<number>();
  /** Keywords announced in FLAGS (RFC 3501 §7.2.6: a new one is announced again with FLAGS). */
  readonly keywords = new Set<string>();
  /** Mailbox-wide MODSEQ up to which changes are reflected here. */
  cursor: number;
  highestModseq: number;
  /**
   * The folder's HIGHESTMODSEQ as this client knows it (QRESYNC): every change of the folder up to it has been
   * reported, so the tagged OK of EXPUNGE and MOVE may carry it (RFC 7162 §3.2.7).
   */
  folderModseq = 0;
  /** The lowest MODSEQ of the expunges not announced yet (0: none, or not known). */
  expungeModseq = 0;
  /** The last `OK [HIGHESTMODSEQ]` sent while expunges waited (sent again only when it changes). */
  heldModseq = 0;

  constructor(
    readonly target: MailboxTarget,
    readonly folderId: number,
    readonly uidValidity: number,
    readonly readOnly: boolean,
    index: FolderIndex,
  ) {
    this.uidArr = index.uids;
    this.modArr = index.modseqs;
    this.n = index.uids.length;
    this.cursor = index.cursor;
    this.highestModseq = index.cursor;
    for (const k of index.keywords) this.keywords.add(k);
    for (let i = 0; i < this.n; i++) if (this.modArr[i]! > this.highestModseq) this.highestModseq = this.modArr[i]!;
  }

  get count(): number {
    return this.n;
  }

  /** UID at a 0-based position. */
  uid(pos: number): number {
    return this.uidArr[pos]!;
  }

  /** The UIDs in sequence order (a view, valid until the next change of the view). */
  get uids(): Uint32Array {
    return this.uidArr.subarray(0, this.n);
  }

  get lastUid(): number {
    return this.n ? this.uidArr[this.n - 1]! : 0;
  }

  /** MODSEQ of the message at a position as last reported to the client. */
  modseqAt(pos: number): number {
    return this.modArr[pos]!;
  }

  /** 1-based sequence number of a UID, or 0. */
  seqOf(uid: number): number {
    let lo = 0;
    let hi = this.n - 1;
    const a = this.uidArr;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = a[mid]!;
      if (v === uid) return mid + 1;
      if (v < uid) lo = mid + 1;
      else hi = mid - 1;
    }
    return 0;
  }

  has(uid: number): boolean {
    return this.seqOf(uid) > 0;
  }

  /** 0-based positions named by a sequence set (message numbers or UIDs). */
  positions(set: SequenceSet, byUid: boolean): number[] {
    // `$` names the same messages in FETCH and UID FETCH (RFC 5182 §2.1): they are kept as UIDs.
    if (isSavedResult(set)) return [...this.saved].map((u) => this.seqOf(u) - 1).filter((p) => p >= 0).sort((a, b) => a - b);
    return byUid ? resolveUids(set, this.uids) : resolveSeqNumbers(set, this.n);
  }

  /** Records what the client now knows of a message (its MODSEQ); false when it is not in the view. */
  update(meta: { uid: number; modseq: number }): boolean {
    const seq = this.seqOf(meta.uid);
    if (!seq) return false;
    if (meta.modseq > this.modArr[seq - 1]!) this.modArr[seq - 1] = meta.modseq;
    if (meta.modseq > this.highestModseq) this.highestModseq = meta.modseq;
    return true;
  }

  /** Adds a message after the last one (a UID above every UID in the view). */
  append(uid: number, modseq: number): void {
    if (this.n === this.uidArr.length) {
      const cap = Math.max(16, this.n * 2);
      const u = new Uint32Array(cap);
      u.set(this.uidArr.subarray(0, this.n));
      const m = new Float64Array(cap);
      m.set(this.modArr.subarray(0, this.n));
      this.uidArr = u;
      this.modArr = m;
    }
    this.uidArr[this.n] = uid;
    this.modArr[this.n] = modseq;
    this.n++;
    if (modseq > this.highestModseq) this.highestModseq = modseq;
  }

  /** Removes a UID from the view; returns its former sequence number. */
  remove(uid: number): number {
    const seq = this.seqOf(uid);
    if (seq) {
      this.uidArr.copyWithin(seq - 1, seq, this.n);
      this.modArr.copyWithin(seq - 1, seq, this.n);
      this.n--;
    }
    this.pendingExpunge.delete(uid);
    this.recent.delete(uid);
    this.saved.delete(uid);
    return seq;
  }

  /** A message's flags as FETCH shows them: the stored ones, and `\Recent` when it is recent in this session. */
  flagsText(meta: { uid: number; flags: readonly string[] }): string {
    const stored = meta.flags.join(' ');
    if (!this.recent.has(meta.uid)) return stored;
    return stored ? `${stored} \\Recent` : '\\Recent';
  }
}

export class Session {
  state: SessionState = 'not-authenticated';
  account: MailboxAccount | null = null;
  selected: SelectedMailbox | null = null;
  /** CONDSTORE enabled (RFC 7162 §3.1): MODSEQ in FETCH responses for flag changes. */
  condstore = false;
  /**
   * `ENABLE IMAP4rev2` (RFC 9051): no `\Recent` (no RECENT response, none claimed), SEARCH answers ESEARCH, mailbox
   * names in UTF-8, SELECT says LIST and CLOSED (Appendix E).
   */
  imap4rev2 = false;
  /** QRESYNC enabled (RFC 7162 §3.2.3): VANISHED instead of EXPUNGE, the QRESYNC SELECT parameter, UID FETCH VANISHED. */
  qresync = false;
  authFailures = 0;
  clientId: Record<string, string | null> | null = null;
  private dirty = false;
  private unsubscribe: (() => void) | null = null;
  /** Called when a watched mailbox changes (IDLE uses it to push). */
  onDirty: (() => void) | null = null;
  /** Called when the logged-in account is deleted (the connection says BYE). */
  onRevoked: (() => void) | null = null;
  private stopWatchingAccount: (() => void) | null = null;

  constructor(
    readonly deps: SessionDeps,
    readonly client: ClientChannel,
  ) {}

  get store(): MailStore {
    return this.deps.store;
  }

  untagged(text: string): Promise<void> {
    return this.client.write(`* ${text}\r\n`);
  }

  login(account: MailboxAccount): void {
    this.account = account;
    this.state = 'authenticated';
    // A deleted mailbox ends its open sessions at once (a password change does not: the session was
    // opened with the password of its time, as in other IMAP servers).
    this.stopWatchingAccount = this.store.onDirectoryChange(() => {
      this.store.getAccount(account.id).then(
        (current) => {
          if (!current && this.state !== 'logout') this.onRevoked?.();
        },
        () => undefined,
      );
    });
  }

  /** Resolves a client mailbox name to a folder of the account or of an account that shares with it. */
  async resolve(name: string): Promise<MailboxTarget | null> {
    const account = this.account!;
    const prefix = SHARED_PREFIX + FOLDER_DELIMITER;
    if (!name.startsWith(prefix)) return { mailboxId: account.id, path: name, name, access: 'owner' };
    const rest = name.slice(prefix.length);
    const slash = rest.indexOf(FOLDER_DELIMITER);
    if (slash <= 0) return null;
    const owner = rest.slice(0, slash).toLowerCase();
    const path = rest.slice(slash + 1);
    const shares = await this.store.sharedWith(account.id);
    const share = shares.find((s) => s.owner.address === owner);
    if (!share || !path) return null;
    return { mailboxId: share.owner.id, path: /^inbox$/i.test(path) ? 'INBOX' : path, name, access: share.access };
  }

  select(view: SelectedMailbox): void {
    this.deselect();
    this.selected = view;
    this.state = 'selected';
    this.dirty = false;
    this.unsubscribe = this.store.onChange(view.target.mailboxId, (change: Change) => {
      if (change.folderId !== view.folderId) return;
      this.heard++;
      this.dirty = true;
      this.onDirty?.();
    });
  }

  deselect(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.selected = null;
    if (this.state === 'selected') this.state = 'authenticated';
  }

  close(): void {
    this.deselect();
    this.stopWatchingAccount?.();
    this.stopWatchingAccount = null;
    this.state = 'logout';
  }

  /** Changes to the selected folder heard from the store (`ownChange` tells its own from others'). */
  private heard = 0;

  /**
   * Runs a flag change of this session's own (STORE, FETCH's implicit \Seen) that `apply` then puts in the view:
   * when it was the only change to the mailbox since the view's last sync (its MODSEQ the next one, and the only
   * changes heard meanwhile its own), the view is current and the next command reads no change feed (three reads
   * a command that a client storing flags one message at a time paid each time).
   */
  async ownChange<T extends { updated: Array<{ modseq: number }> }>(change: () => Promise<T>): Promise<T> {
    const view = this.selected;
    const clean = !this.dirty;
    const heard = this.heard;
    const result = await change();
    const modseq = result.updated[0]?.modseq;
    if (view && clean && this.selected === view && modseq === view.cursor + 1 && this.heard - heard === result.updated.length) {
      view.cursor = modseq;
      this.dirty = false;
    }
    return result;
  }

  /** True when the selected folder changed since the last sync. */
  get hasChanges(): boolean {
    return this.dirty;
  }

  /**
   * Brings the selected view up to date and tells the client: FETCH FLAGS for changed flags, EXPUNGE for
   * removed messages when `allowExpunge` (else they wait, RFC 3501 §7.4.1), then EXISTS for new ones.
   */
  async sync(allowExpunge: boolean): Promise<void> {
    const view = this.selected;
    if (!view) return;
    if (this.dirty) {
      this.dirty = false;
      const since = view.cursor;
      const changes = await this.store.syncChanges(view.target.mailboxId, since);
      let cursor = since;
      let changed = false;
      let appended = false;
      const flagged = new Map<number, Pick<MessageMeta, 'uid' | 'flags' | 'modseq'>>();
      if (changes === null) {
        // The feed was pruned past our cursor: compare the view with the folder itself.
        const index = await this.store.folderIndex(view.folderId);
        cursor = index.cursor;
        let j = 0;
        for (let i = 0; i < view.count; i++) {
          const uid = view.uid(i);
          while (j < index.uids.length && index.uids[j]! < uid) j++;
          if (j >= index.uids.length || index.uids[j] !== uid) {
            view.pendingExpunge.add(uid);
            // When it went is not known: after what the client was told last.
            if (!view.expungeModseq) view.expungeModseq = view.folderModseq + 1;
          }
        }
        changed = true;
      } else {
        for (const c of changes) {
          if (c.modseq > cursor) cursor = c.modseq;
          if (c.folderId !== view.folderId) continue;
          if (c.modseq > view.folderModseq) view.folderModseq = c.modseq;
          if (c.kind === 'expunge') {
            if (view.has(c.uid)) {
              view.pendingExpunge.add(c.uid);
              if (!view.expungeModseq || c.modseq < view.expungeModseq) view.expungeModseq = c.modseq;
            }
          } else if (c.kind === 'append') {
            appended = true;
          } else if (c.kind === 'flags') {
            // A flag change carries the message's whole flags: the last one of a message is its state as of this read.
            flagged.set(c.uid, { uid: c.uid, flags: c.flags, modseq: c.modseq });
          }
        }
      }
      const lines: string[] = [];
      const seenFlags: string[][] = [];
      if (changed || appended || flagged.size) {
        // Known messages' flags from the feed; new ones (UIDs past the view's last) read, and only those.
        const lastUid = view.lastUid;
        const metas: Array<Pick<MessageMeta, 'uid' | 'flags' | 'modseq'>> = changed
          ? await this.store.listMessages(view.folderId, { changedSince: since })
          : [...flagged.values()].filter((m) => m.uid <= lastUid).sort((a, b) => a.uid - b.uid);
        if (!changed && appended) metas.push(...(await this.store.listMessages(view.folderId, { uidRange: [lastUid + 1, 2 ** 32 - 1] })));
        for (const m of metas) {
          if (m.flags.some((f) => !f.startsWith('\\'))) seenFlags.push(m.flags);
          const seq = view.seqOf(m.uid);
          if (seq) {
            // A known message whose MODSEQ moved on had its flags changed (nothing else changes a message).
            if (m.modseq <= view.modseqAt(seq - 1) || view.pendingExpunge.has(m.uid)) continue;
            view.update(m);
            lines.push(this.flagsLine(view, m, true));
          } else if (m.uid > lastUid) {
            view.append(m.uid, m.modseq);
          }
        }
        if (view.lastUid > lastUid) await this.claimRecent(view, lastUid);
      }
      view.cursor = Math.max(view.cursor, cursor);
      for (const flags of seenFlags) await this.announceKeywords(flags);
      for (const line of lines) await this.untagged(line);
    }
    if (allowExpunge && view.pendingExpunge.size) {
      await this.announceExpunges([...view.pendingExpunge].sort((a, b) => a - b));
    } else if (this.qresync && view.pendingExpunge.size && view.expungeModseq && view.heldModseq !== view.expungeModseq - 1) {
      // RFC 7162 §3.2: MODSEQs sent while expunges wait must not let the client skip them when it resyncs later.
      view.heldModseq = view.expungeModseq - 1;
      await this.untagged(`OK [HIGHESTMODSEQ ${view.heldModseq}] Expunges pending`);
    }
    if (view.count !== this.announced) {
      const grew = view.count > this.announced;
      this.announced = view.count;
      await this.untagged(`${view.count} EXISTS`);
      if (grew && !this.imap4rev2) await this.untagged(`${view.recent.size} RECENT`);
    }
  }

  /**
   * The messages of the view after `afterUid` that are recent for this session: claimed from the folder by a
   * read-write session (so no other session sees them as recent), those from the SELECT's mark on when read-only.
   */
  async claimRecent(view: SelectedMailbox, afterUid: number): Promise<void> {
    // IMAP4rev2 has no \Recent (RFC 9051 Appendix E): such a session claims none, so IMAP4rev1 sessions still see them.
    if (this.imap4rev2) return;
    let from = view.recentFrom;
    if (!view.readOnly) {
      // The folder's mark only grows: past the view's last UID already, there is nothing to claim (no write).
      if (from > view.lastUid) return;
      from = await this.store.claimRecent(view.folderId, view.lastUid);
      view.recentFrom = view.lastUid + 1;
    }
    for (let i = view.count - 1; i >= 0; i--) {
      const uid = view.uid(i);
      if (uid <= afterUid || uid < from) break;
      view.recent.add(uid);
    }
  }

  /** Mailbox names in responses and arguments are UTF-8, not modified UTF-7 (RFC 9051 §5.1). */
  get utf8Names(): boolean {
    return this.imap4rev2;
  }

  /** The message count the client was last told. */
  announced = 0;

  /** Removes a message from the view and sends its EXPUNGE (RFC 3501 §7.4.1), or VANISHED once QRESYNC is on. */
  async announceExpunge(uid: number): Promise<void> {
    const view = this.selected;
    if (!view) return;
    const seq = view.remove(uid);
    if (!seq) return;
    if (seq <= this.announced) this.announced--;
    await this.untagged(this.qresync ? `VANISHED ${uid}` : `${seq} EXPUNGE`);
  }

  /**
   * Removes messages (UIDs ascending) from the view and tells the client: an EXPUNGE each, or once QRESYNC is
   * enabled one `VANISHED uid-set` for them all (RFC 7162 §3.2.10).
   */
  async announceExpunges(uids: readonly number[]): Promise<void> {
    const view = this.selected;
    if (!view) return;
    if (!this.qresync) {
      for (const uid of uids) await this.announceExpunge(uid);
    } else {
      const gone: number[] = [];
      for (const uid of uids) {
        const seq = view.remove(uid);
        if (!seq) continue;
        if (seq <= this.announced) this.announced--;
        gone.push(uid);
      }
      if (gone.length) await this.untagged(`VANISHED ${formatSet(gone)}`);
    }
    if (!view.pendingExpunge.size) view.expungeModseq = view.heldModseq = 0;
  }

  /**
   * Sends FLAGS and PERMANENTFLAGS again when these flags bring keywords the client has not been told of
   * (RFC 3501 §7.2.6); call before the FETCH responses that carry them.
   */
  async announceKeywords(flags: readonly string[]): Promise<void> {
    const view = this.selected;
    if (!view) return;
    let added = false;
    for (const f of flags) {
      if (f.startsWith('\\') || view.keywords.has(f)) continue;
      view.keywords.add(f);
      added = true;
    }
    if (!added) return;
    const all = ['\\Seen', '\\Answered', '\\Flagged', '\\Deleted', '\\Draft', ...view.keywords].join(' ');
    await this.untagged(`FLAGS (${all})`);
    await this.untagged(`OK [PERMANENTFLAGS (${view.readOnly ? '' : `${all} \\*`})] Flags permitted`);
  }

  /** `N FETCH (FLAGS (...) UID n [MODSEQ (m)])` for a flag change. */
  flagsLine(view: SelectedMailbox, m: Pick<MessageMeta, 'uid' | 'flags' | 'modseq'>, withUid: boolean): string {
    const parts = [`FLAGS (${view.flagsText(m)})`];
    if (withUid) parts.push(`UID ${m.uid}`);
    if (this.condstore) parts.push(`MODSEQ (${m.modseq})`);
    return `${view.seqOf(m.uid)} FETCH (${parts.join(' ')})`;
  }
}
