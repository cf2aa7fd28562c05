// Sequence sets (RFC 3501 §9 sequence-set): `1`, `2:4`, `*`, `7:*`, `*:7` and ranges in either order.
import { ParseError } from './tokens.js';

/** `Infinity` stands for `*`. */
export interface SeqRange {
  from: number;
  to: number;
}
/** `saved`: the `$` of SEARCHRES (RFC 5182), the last saved search result, resolved by the session (no ranges). */
export type SequenceSet = SeqRange[] & { readonly saved?: true };

/** RFC 5182 `seq-last-command`: `$`, the saved search result, where a sequence set may stand. */
export const SAVED_RESULT = '$';
export const isSavedResult = (set: SequenceSet): boolean => set.saved === true;

const STAR = Number.POSITIVE_INFINITY;
const MAX = 4294967295; // nz-number is 32-bit

function seqNumber(s: string): number {
  if (s === '*') return STAR;
  if (!/^[1-9]\d{0,9}$/.test(s)) throw new ParseError(`Bad sequence number "${s}"`);
  const n = Number(s);
  if (n > MAX) throw new ParseError(`Sequence number out of range "${s}"`);
  return n;
}

export function parseSequenceSet(text: string): SequenceSet {
  if (!text) throw new ParseError('Empty sequence set');
  if (text === SAVED_RESULT) return Object.assign([] as SeqRange[], { saved: true as const });
  return text.split(',').map((piece) => {
    const [a, b, extra] = piece.split(':');
    if (extra !== undefined || a === undefined) throw new ParseError(`Bad sequence range "${piece}"`);
    const from = seqNumber(a);
    const to = b === undefined ? from : seqNumber(b);
    return { from, to };
  });
}

export function isSequenceSet(text: string): boolean {
  return text === SAVED_RESULT || /^(\d+|\*)(:(\d+|\*))?(,(\d+|\*)(:(\d+|\*))?)*$/.test(text);
}

/** True when `n` is in the set, `*` meaning `max` (the highest number in use). */
export function inSet(set: SequenceSet, n: number, max: number): boolean {
  for (const r of set) {
    const a = r.from === STAR ? max : r.from;
    const b = r.to === STAR ? max : r.to;
    if (n >= Math.min(a, b) && n <= Math.max(a, b)) return true;
  }
  return false;
}

/**
 * Positions (0-based) of the selected sequence numbers among `count` messages, ascending, without duplicates.
 * Numbers beyond `count` are ignored here; the caller decides whether that is an error.
 */
export function resolveSeqNumbers(set: SequenceSet, count: number): number[] {
  if (count === 0) return [];
  const hit = new Uint8Array(count);
  for (const r of set) {
    const a = r.from === STAR ? count : r.from;
    const b = r.to === STAR ? count : r.to;
    const lo = Math.max(1, Math.min(a, b));
    const hi = Math.min(count, Math.max(a, b));
    for (let n = lo; n <= hi; n++) hit[n - 1] = 1;
  }
  const out: number[] = [];
  for (let i = 0; i < count; i++) if (hit[i]) out.push(i);
  return out;
}

/** True when a message sequence set names a number beyond `count` (RFC 3501: BAD for FETCH/STORE/COPY). */
export function seqOutOfRange(set: SequenceSet, count: number): boolean {
  return set.some((r) => (r.from !== STAR && r.from > count) || (r.to !== STAR && r.to > count));
}

/**
 * Positions (0-based) in the ascending `uids` list of the UIDs in the set. `*` is the highest UID in use;
 * RFC 3501 §6.4.8: a range `n:*` always includes the highest UID even when `n` is greater than it.
 */
export function resolveUids(set: SequenceSet, uids: ArrayLike<number>): number[] {
  if (uids.length === 0) return [];
  const max = uids[uids.length - 1]!;
  const out: number[] = [];
  for (let i = 0; i < uids.length; i++) if (inSet(set, uids[i]!, max)) out.push(i);
  return out;
}

/** Compact text form of ascending numbers: `1:3,7,9:10` (for COPYUID, MODIFIED, SEARCH results). */
export function formatSet(numbers: readonly number[]): string {
  const out: string[] = [];
  let i = 0;
  while (i < numbers.length) {
    let j = i;
    while (j + 1 < numbers.length && numbers[j + 1] === numbers[j]! + 1) j++;
    out.push(i === j ? String(numbers[i]) : `${numbers[i]}:${numbers[j]}`);
    i = j + 1;
  }
  return out.join(',');
}
