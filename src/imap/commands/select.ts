// tag SELECT/EXAMINE mailbox [(CONDSTORE)] [(QRESYNC (…))] (RFC 3501 §6.3.1-2, RFC 7162 §3.1.8, §3.2.5; MAILBOXID RFC 8474) | tag CHECK | tag CLOSE |
// tag EXPUNGE (§6.4) | tag UNSELECT (RFC 3691) | tag UID EXPUNGE set (RFC 4315 §2.1)
import { FOLDER_DELIMITER, SYSTEM_FLAGS, type Folder } from '../../mailstore/types.js';
import { formatMailboxName } from '../protocol/mutf7.js';
import { SelectedMailbox, type Session } from '../session.js';
import { storeFailure } from './errors.js';
import { readRows } from './fetch.js';
import type { CommandOf } from '../protocol/commands.js';
import { resyncSelected, seqMatchFloor } from './qresync.js';
import { AUTH, bad, no, ok, SELECTED, type CommandSpec, type Result } from './types.js';

async function open(s: Session, cmd: CommandOf<'SELECT' | 'EXAMINE'>, readOnly: boolean): Promise<Result> {
  const { mailbox: name, condstore } = cmd;
  const qr = cmd.qresync ?? null;
  // RFC 7162 §3.2.5: the QRESYNC parameter only once ENABLE QRESYNC was answered.
  if (qr && !s.qresync) return bad('QRESYNC is not enabled');
  // RFC 7162 §3.2.11 and RFC 9051 §7.1: CLOSED ends the responses of the mailbox this SELECT closes (for the
  // clients that enabled QRESYNC or IMAP4rev2; an IMAP4rev1 client's transcript stays as it was).
  if (s.selected && (s.qresync || s.imap4rev2)) await s.untagged('OK [CLOSED] Previous mailbox closed');
  // RFC 3501 §6.3.1: a failed SELECT leaves no mailbox selected.
  s.deselect();
  if (condstore) s.condstore = true;
  const target = await s.resolve(name);
  const folder = target ? await s.store.getFolder(target.mailboxId, target.path, { counts: false }) : null;
  if (!target || !folder) return no('No such mailbox', 'NONEXISTENT');
  // UIDs and MODSEQs only (typed arrays), the first unseen message and the keywords: no message rows.
  const index = await s.store.folderIndex(folder.id);
  const ro = readOnly || target.access === 'read';
  const view = new SelectedMailbox(target, folder.id, folder.uidValidity, ro, index);
  const floor = qr?.seqMatch ? seqMatchFloor(view, qr.seqMatch) : 1;
  if (floor === null) return bad('QRESYNC sequence match data: the two sets differ in length');
  view.recentFrom = folder.recentUid;
  await s.claimRecent(view, 0);
  s.select(view);
  s.announced = view.count;
  const firstUnseen = index.firstUnseenUid ? view.seqOf(index.firstUnseenUid) : 0;
  const flags = [...SYSTEM_FLAGS, ...view.keywords].join(' ');
  await s.untagged(`FLAGS (${flags})`);
  await s.untagged(`OK [PERMANENTFLAGS (${ro ? '' : `${flags} \\*`})] Flags permitted`);
  await s.untagged(`${view.count} EXISTS`);
  // IMAP4rev2 (RFC 9051 Appendix E): no RECENT, no UNSEEN code; the mailbox's LIST response instead (§6.3.2).
  if (s.imap4rev2) await s.untagged(await selectedListLine(s, folder));
  else {
    await s.untagged(`${view.recent.size} RECENT`);
    if (firstUnseen) await s.untagged(`OK [UNSEEN ${firstUnseen}] First unseen`);
  }
  await s.untagged(`OK [UIDVALIDITY ${folder.uidValidity}] UIDs valid`);
  await s.untagged(`OK [UIDNEXT ${folder.uidNext}] Predicted next UID`);
  view.folderModseq = Math.max(folder.highestModseq, view.highestModseq);
  await s.untagged(`OK [HIGHESTMODSEQ ${view.folderModseq}] Highest`);
  await s.untagged(`OK [MAILBOXID (${folder.objectId})] Ok`); // RFC 8474 §4.1
  // RFC 7162 §3.2.5: with the UIDVALIDITY the client knew, what vanished and what changed since its MODSEQ.
  if (qr && qr.uidValidity === folder.uidValidity) await resyncSelected(s, view, qr, folder.uidNext, floor);
  return ok(`${readOnly ? 'EXAMINE' : 'SELECT'} completed`, ro ? 'READ-ONLY' : 'READ-WRITE');
}

export const SELECT: CommandSpec<'SELECT'> = {
  states: AUTH,
  updates: 'none',
  handle: (s, cmd) => open(s, cmd, false),
};

export const EXAMINE: CommandSpec<'EXAMINE'> = {
  states: AUTH,
  updates: 'none',
  handle: (s, cmd) => open(s, cmd, true),
};

export const CHECK: CommandSpec<'CHECK'> = {
  states: SELECTED,
  updates: 'full',
  async handle() {
    return ok('Check completed');
  },
};

/** Expunges \Deleted messages (all, or those among `uids`) and announces each EXPUNGE (or VANISHED); answers how many went. */
async function expunge(s: Session, uids: number[] | undefined, silent: boolean): Promise<Result | number> {
  const view = s.selected!;
  if (view.readOnly) return no('Mailbox is read-only', 'READ-ONLY');
  let gone: number[];
  try {
    gone = await s.store.expunge(view.folderId, uids);
  } catch (err) {
    return storeFailure(err);
  }
  if (silent) for (const uid of gone) view.remove(uid);
  else await s.announceExpunges(gone);
  return gone.length;
}

/**
 * RFC 7162 §3.2.7: once QRESYNC is on, the tagged OK of a command that expunged carries the folder's new
 * HIGHESTMODSEQ (after the other changes up to it have been told).
 */
export async function expungedModseq(s: Session, expunged: number): Promise<string | undefined> {
  if (!s.qresync || expunged === 0 || !s.selected) return undefined;
  await s.sync(true);
  return s.selected ? `HIGHESTMODSEQ ${s.selected.folderModseq}` : undefined;
}

export const EXPUNGE: CommandSpec<'EXPUNGE'> = {
  states: SELECTED,
  updates: 'full',
  async handle(s, cmd) {
    const view = s.selected!;
    let uids: number[] | undefined;
    if (cmd.uids) {
      uids = view.positions(cmd.uids, true).map((p) => view.uid(p));
      // RFC 4315 §2.1: only those of them that have \Deleted (the store removes whatever it is given).
      const rows = await readRows(s, uids, 'state');
      uids = uids.filter((u) => rows.get(u)?.flags.includes('\\Deleted'));
      if (uids.length === 0) return ok('Expunge completed');
    }
    await s.sync(true);
    const done = await expunge(s, uids, false);
    if (typeof done !== 'number') return done;
    return ok('Expunge completed', await expungedModseq(s, done));
  },
};

/** CLOSE expunges silently (RFC 3501 §6.4.2) unless the mailbox is read-only; UNSELECT does not. */
export const CLOSE: CommandSpec<'CLOSE'> = {
  states: SELECTED,
  updates: 'none',
  async handle(s) {
    if (!s.selected!.readOnly) {
      const failed = await expunge(s, undefined, true);
      if (typeof failed !== 'number') return failed;
    }
    s.deselect();
    return ok('Close completed');
  },
};

export const UNSELECT: CommandSpec<'UNSELECT'> = {
  states: SELECTED,
  updates: 'none',
  async handle(s) {
    s.deselect();
    return ok('Unselect completed');
  },
};

/** RFC 9051 §6.3.2: `LIST (attributes) "/" name` of the mailbox SELECT/EXAMINE opened (children and special use). */
async function selectedListLine(s: Session, folder: Folder): Promise<string> {
  const view = s.selected!;
  const prefix = view.target.path + FOLDER_DELIMITER;
  const folders = await s.store.listFolders(view.target.mailboxId);
  const attrs = [folders.some((f) => f.path.startsWith(prefix)) ? '\\HasChildren' : '\\HasNoChildren'];
  if (folder.specialUse && view.target.access === 'owner') attrs.push(folder.specialUse);
  return `LIST (${attrs.join(' ')}) "${FOLDER_DELIMITER}" ${formatMailboxName(view.target.name, s.utf8Names)}`;
}
