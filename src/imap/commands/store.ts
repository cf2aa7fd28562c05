// tag [UID] STORE set [(UNCHANGEDSINCE n)] (+|-)FLAGS[.SILENT] (flags) (RFC 3501 §6.4.6; RFC 7162 §3.1.3)
import type { MessageMeta, MessageState } from '../../mailstore/types.js';
import { formatSet, seqOutOfRange } from '../protocol/sequence.js';
import { readRows } from './fetch.js';
import { storeFailure } from './errors.js';
import { bad, no, ok, SELECTED, type CommandSpec } from './types.js';

export const STORE: CommandSpec<'STORE'> = {
  states: SELECTED,
  updates: 'no-expunge',
  async handle(s, cmd) {
    await s.sync(false);
    const view = s.selected!;
    if (!cmd.uid && seqOutOfRange(cmd.set, view.count)) return bad('Invalid message sequence number');
    if (view.readOnly) return no('Mailbox is read-only', 'READ-ONLY');
    if (cmd.unchangedSince !== null) s.condstore = true;
    const uids = view.positions(cmd.set, cmd.uid).map((p) => view.uid(p)).filter((u) => !view.pendingExpunge.has(u));
    if (uids.length === 0) return ok('Store completed');
    let result;
    try {
      result = await s.ownChange(() => s.store.setFlags(view.folderId, uids, cmd.mode, cmd.flags, cmd.unchangedSince !== null ? { unchangedSince: cmd.unchangedSince } : {}));
    } catch (err) {
      return storeFailure(err);
    }
    const updated = new Map<number, MessageMeta>();
    for (const m of result.updated) if (view.update(m)) updated.set(m.uid, m);
    await s.announceKeywords(cmd.flags);
    const modified = new Set(result.modified);
    // Without .SILENT every message's flags are echoed, changed or not: read the unchanged ones' rows.
    const others = cmd.silent ? new Map<number, MessageState>() : await readRows(s, uids.filter((u) => !updated.has(u) && !modified.has(u)), 'state');
    for (const uid of uids) {
      if (modified.has(uid)) continue;
      const meta = updated.get(uid) ?? others.get(uid);
      if (!meta) continue;
      // .SILENT suppresses the FLAGS echo; with CONDSTORE the new MODSEQ is still reported (RFC 7162 §3.1.3).
      if (cmd.silent && !(s.condstore && updated.has(uid))) continue;
      const parts: string[] = [];
      if (!cmd.silent) parts.push(`FLAGS (${s.selected!.flagsText(meta)})`);
      if (cmd.uid) parts.push(`UID ${uid}`);
      if (s.condstore) parts.push(`MODSEQ (${meta.modseq})`);
      await s.untagged(`${view.seqOf(uid)} FETCH (${parts.join(' ')})`);
    }
    if (modified.size) {
      const list = [...modified].sort((a, b) => a - b).map((uid) => (cmd.uid ? uid : view.seqOf(uid))).filter((n) => n > 0);
      return ok('Conditional store completed', `MODIFIED ${formatSet(list.sort((a, b) => a - b))}`);
    }
    return ok('Store completed');
  },
};
