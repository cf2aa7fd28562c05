// tag [UID] COPY set mailbox (RFC 3501 §6.4.7, COPYUID per RFC 4315) | tag [UID] MOVE set mailbox (RFC 6851)
import { formatSet, seqOutOfRange, type SequenceSet } from '../protocol/sequence.js';
import type { Session } from '../session.js';
import { storeFailure } from './errors.js';
import { expungedModseq } from './select.js';
import { bad, no, ok, SELECTED, type CommandSpec, type Result } from './types.js';

async function transfer(s: Session, cmd: { uid: boolean; set: SequenceSet; mailbox: string }, move: boolean): Promise<Result> {
  await s.sync(false);
  const view = s.selected!;
  if (!cmd.uid && seqOutOfRange(cmd.set, view.count)) return bad('Invalid message sequence number');
  if (move && view.readOnly) return no('Mailbox is read-only', 'READ-ONLY');
  const target = await s.resolve(cmd.mailbox);
  const dest = target ? await s.store.getFolder(target.mailboxId, target.path, { counts: false }) : null;
  if (!target || !dest) return no('No such mailbox', 'TRYCREATE');
  if (target.access === 'read') return no('Shared mailbox is read-only', 'NOPERM');
  const uids = view.positions(cmd.set, cmd.uid).map((p) => view.uid(p)).filter((u) => !view.pendingExpunge.has(u));
  const verb = move ? 'Move' : 'Copy';
  if (uids.length === 0) return ok(`${verb} completed`);
  let res;
  try {
    res = move ? await s.store.move(view.folderId, uids, dest.id) : await s.store.copy(view.folderId, uids, dest.id);
  } catch (err) {
    return storeFailure(err);
  }
  const code = res.pairs.length ? `COPYUID ${res.uidValidity} ${formatSet(res.pairs.map((p) => p[0]))} ${formatSet(res.pairs.map((p) => p[1]))}` : undefined;
  if (!move) return ok(`${verb} completed`, code);
  // RFC 6851 §4.3: COPYUID goes in an untagged OK before the EXPUNGEs.
  if (code) await s.untagged(`OK [${code}] Moved`);
  // One VANISHED for them all once QRESYNC is on (RFC 6851 §4.3), and the new HIGHESTMODSEQ (RFC 7162 §3.2.7).
  await s.announceExpunges(res.pairs.map(([src]) => src).sort((a, b) => a - b));
  return ok(`${verb} completed`, await expungedModseq(s, res.pairs.length));
}

export const COPY: CommandSpec<'COPY'> = {
  states: SELECTED,
  updates: 'full',
  handle: (s, cmd) => transfer(s, cmd, false),
};

export const MOVE: CommandSpec<'MOVE'> = {
  states: SELECTED,
  updates: 'full',
  handle: (s, cmd) => transfer(s, cmd, true),
};
