// QRESYNC (RFC 7162 §3.2): what SELECT/EXAMINE with the QRESYNC parameter sends after the usual responses
// (`VANISHED (EARLIER)` for the known UIDs expunged since the client's MODSEQ, then FETCH FLAGS for the messages
// changed since), and the `VANISHED (EARLIER)` of UID FETCH … (CHANGEDSINCE m VANISHED). The expunged UIDs come
// from the store's tombstones (mailstore/vanished.ts); when those were pruned past the client's MODSEQ the store
// names every UID that is gone, and the client's known UIDs and sequence match data narrow that down (§3.2.5.2).
import type { QresyncParams } from '../protocol/commands.js';
import type { SequenceSet } from '../protocol/sequence.js';
import type { SelectedMailbox, Session } from '../session.js';

type Ranges = Array<[number, number]>;

/** A sequence set as ascending disjoint ranges, `*` meaning `max`. */
export function setRanges(set: SequenceSet, max: number): Ranges {
  const out: Ranges = [];
  for (const r of set) {
    const a = r.from === Infinity ? max : r.from;
    const b = r.to === Infinity ? max : r.to;
    if (Math.max(a, b) >= 1) out.push([Math.max(1, Math.min(a, b)), Math.max(a, b)]);
  }
  out.sort((x, y) => x[0] - y[0]);
  const merged: Ranges = [];
  for (const [a, b] of out) {
    const top = merged[merged.length - 1];
    if (top && a <= top[1] + 1) top[1] = Math.max(top[1], b);
    else merged.push([a, b]);
  }
  return merged;
}

/** The intersection of two ascending disjoint range lists. */
export function intersect(a: Ranges, b: Ranges): Ranges {
  const out: Ranges = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const lo = Math.max(a[i]![0], b[j]![0]);
    const hi = Math.min(a[i]![1], b[j]![1]);
    if (lo <= hi) out.push([lo, hi]);
    if (a[i]![1] < b[j]![1]) i++;
    else j++;
  }
  return out;
}

/** Ranges less the UIDs the view holds (a message there is not gone, whatever a tombstone says). */
function withoutPresent(ranges: Ranges, view: SelectedMailbox): Ranges {
  const out: Ranges = [];
  const uids = view.uids;
  for (const [a, b] of ranges) {
    // First position with a UID ≥ a.
    let lo = 0;
    let hi = uids.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (uids[mid]! < a) lo = mid + 1;
      else hi = mid;
    }
    let from = a;
    for (let k = lo; k < uids.length && uids[k]! <= b; k++) {
      if (uids[k]! > from) out.push([from, uids[k]! - 1]);
      from = uids[k]! + 1;
    }
    if (from <= b) out.push([from, b]);
  }
  return out;
}

export const formatRanges = (ranges: Ranges): string => ranges.map(([a, b]) => (a === b ? String(a) : `${a}:${b}`)).join(',');

/** Count of the numbers in a sequence set without `*` (Infinity when it has one). */
function setSize(set: SequenceSet): number {
  let n = 0;
  for (const r of set) n += r.from === Infinity || r.to === Infinity ? Infinity : Math.abs(r.to - r.from) + 1;
  return n;
}

/** The numbers of a sequence set in the order written (ranges ascending as RFC 7162 requires of the match data). */
function* members(set: SequenceSet): Generator<number> {
  for (const r of set) {
    const lo = Math.min(r.from, r.to);
    const hi = Math.max(r.from, r.to);
    for (let n = lo; n <= hi; n++) yield n;
  }
}

/**
 * RFC 7162 §3.2.5.2 message sequence match data: the pairs (sequence number, UID) are compared with the mailbox in
 * order; up to the last pair that matches before the first that does not, the client knows every expunge, so
 * VANISHED starts after that UID. Null when the two sets do not have as many members (the command is then BAD).
 */
export function seqMatchFloor(view: SelectedMailbox, match: NonNullable<QresyncParams['seqMatch']>): number | null {
  const n = setSize(match.seqs);
  if (n === Infinity || n !== setSize(match.uids)) return null;
  let floor = 1;
  const uids = members(match.uids);
  for (const seq of members(match.seqs)) {
    const uid = uids.next().value as number;
    if (seq > view.count || view.uid(seq - 1) !== uid) break;
    floor = uid + 1;
  }
  return floor;
}

/** RFC 7162 §3.2.5: the VANISHED (EARLIER) and FETCH responses of a SELECT/EXAMINE with matching UIDVALIDITY. */
export async function resyncSelected(s: Session, view: SelectedMailbox, qr: QresyncParams, uidNext: number, floor: number): Promise<void> {
  // Without known UIDs the client is taken to know 1:(UIDNEXT-1).
  let scope: Ranges = qr.knownUids ? setRanges(qr.knownUids, Math.max(1, uidNext - 1)) : uidNext > 1 ? [[1, uidNext - 1]] : [];
  if (floor > 1) scope = intersect(scope, [[floor, Number.MAX_SAFE_INTEGER]]);
  const gone = withoutPresent(intersect(await s.store.vanishedSince(view.folderId, qr.modseq), scope), view);
  if (gone.length) await s.untagged(`VANISHED (EARLIER) ${formatRanges(gone)}`);
  // Flag changes since the client's MODSEQ (new messages too): those of its known UIDs when it named them.
  const changed: number[] = [];
  const known = qr.knownUids ? setRanges(qr.knownUids, view.lastUid) : null;
  let k = 0;
  for (let i = 0; i < view.count; i++) {
    if (view.modseqAt(i) <= qr.modseq) continue;
    const uid = view.uid(i);
    if (known) {
      while (k < known.length && known[k]![1] < uid) k++;
      if (k >= known.length || known[k]![0] > uid) continue;
    }
    changed.push(uid);
  }
  for (let b = 0; b < changed.length; b += 1000) {
    const batch = changed.slice(b, b + 1000);
    for (const m of await s.store.listStates(view.folderId, { uids: batch })) await s.untagged(s.flagsLine(view, m, true));
  }
}

/** RFC 7162 §3.2.6: the UIDs of `set` expunged since `modseq`, as `VANISHED (EARLIER)` (nothing when none). */
export async function vanishedEarlier(s: Session, view: SelectedMailbox, set: SequenceSet, modseq: number): Promise<void> {
  const scope = setRanges(set, view.lastUid);
  const gone = withoutPresent(intersect(await s.store.vanishedSince(view.folderId, modseq), scope), view);
  if (gone.length) await s.untagged(`VANISHED (EARLIER) ${formatRanges(gone)}`);
}
