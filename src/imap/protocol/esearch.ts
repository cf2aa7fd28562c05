// ESEARCH (RFC 4731) and SEARCHRES (RFC 5182): the `RETURN (...)` options of SEARCH and the `* ESEARCH` response.
// No I/O, no session: the SEARCH handler gives the matches, this file says what the client is told and what `$` keeps.
import type { SearchKey } from './search.js';
import { formatSet, isSavedResult, type SequenceSet } from './sequence.js';
import { ParseError, type Token } from './tokens.js';
import { formatString } from './writer.js';

export type ReturnOption = 'MIN' | 'MAX' | 'ALL' | 'COUNT' | 'SAVE';
const OPTIONS: ReadonlySet<string> = new Set<ReturnOption>(['MIN', 'MAX', 'ALL', 'COUNT', 'SAVE']);

/** `RETURN (opts)`: the options, `RETURN ()` meaning `RETURN (ALL)` (RFC 4731 §3.1); an unknown one is BAD. */
export function parseReturnOptions(tokens: Token[]): ReturnOption[] {
  const out: ReturnOption[] = [];
  for (const t of tokens) {
    const v = t.type === 'atom' ? t.value.toUpperCase() : '';
    if (!OPTIONS.has(v)) throw new ParseError(`Unknown search return option ${t.type === 'list' ? '(…)' : t.value}`);
    if (!out.includes(v as ReturnOption)) out.push(v as ReturnOption);
  }
  return out.length ? out : ['ALL'];
}

/** One match: its number as answered (sequence number or UID), its UID and its MODSEQ. */
export interface Hit {
  n: number;
  uid: number;
  modseq: number;
}

/**
 * What `$` keeps after `RETURN (SAVE …)` (RFC 5182 §2.2): with MIN and/or MAX and neither ALL nor COUNT, only those
 * messages; else every match. UIDs, so that `$` serves FETCH and UID FETCH alike and loses expunged messages.
 */
export function savedUids(options: readonly ReturnOption[], hits: readonly Hit[]): number[] {
  if (!hits.length) return [];
  const min = options.includes('MIN');
  const max = options.includes('MAX');
  if ((min || max) && !options.includes('ALL') && !options.includes('COUNT')) {
    const out = new Set<number>();
    if (min) out.add(hits[0]!.uid);
    if (max) out.add(hits[hits.length - 1]!.uid);
    return [...out].sort((a, b) => a - b);
  }
  return hits.map((h) => h.uid);
}

/**
 * `ESEARCH (TAG "t") [UID] [MIN n] [MAX n] [ALL set] [COUNT n] [MODSEQ m]` (RFC 4731 §3.1; `hits` ascending). No
 * match: no MIN, MAX, ALL, but COUNT 0. MODSEQ when the criteria had MODSEQ (RFC 4731 §3.2, RFC 7162 §3.1.5): the
 * MIN's or MAX's when only one of them is asked, the higher of both when only they are, else the highest of all.
 * Null when there is nothing to say: SAVE alone answers no ESEARCH (RFC 5182 §2.2).
 */
export function esearchLine(tag: string, uid: boolean, options: readonly ReturnOption[], hits: readonly Hit[], withModseq: boolean): string | null {
  const asked = options.filter((o) => o !== 'SAVE');
  if (!asked.length) return null;
  const parts = [`ESEARCH (TAG ${formatString(tag)})`];
  if (uid) parts.push('UID');
  const first = hits[0];
  const last = hits[hits.length - 1];
  if (first && last) {
    if (asked.includes('MIN')) parts.push(`MIN ${first.n}`);
    if (asked.includes('MAX')) parts.push(`MAX ${last.n}`);
    if (asked.includes('ALL')) parts.push(`ALL ${formatSet(hits.map((h) => h.n))}`);
  }
  if (asked.includes('COUNT')) parts.push(`COUNT ${hits.length}`);
  if (withModseq && first && last) {
    let modseq = 0;
    if (asked.includes('ALL') || asked.includes('COUNT')) for (const h of hits) modseq = Math.max(modseq, h.modseq);
    else {
      if (asked.includes('MIN')) modseq = first.modseq;
      if (asked.includes('MAX')) modseq = Math.max(modseq, last.modseq);
    }
    parts.push(`MODSEQ ${modseq}`);
  }
  return parts.join(' ');
}

/** UIDs (ascending) as ranges of a sequence set. */
function uidRanges(uids: Iterable<number>): SequenceSet {
  const sorted = [...uids].sort((a, b) => a - b);
  const out: SequenceSet = [];
  for (const u of sorted) {
    const last = out[out.length - 1];
    if (last && last.to === u - 1) last.to = u;
    else out.push({ from: u, to: u });
  }
  return out;
}

/**
 * The criteria with each `$` (as a sequence set or after UID, RFC 5182 §2.1) replaced by the saved UIDs, read before
 * this SEARCH saves anything: `SEARCH RETURN (SAVE) $ …` narrows the previous result. An empty `$` matches nothing.
 */
export function withSavedResult(key: SearchKey, saved: ReadonlySet<number>): SearchKey {
  switch (key.op) {
    case 'and':
      return { op: 'and', keys: key.keys.map((k) => withSavedResult(k, saved)) };
    case 'or':
      return { op: 'or', a: withSavedResult(key.a, saved), b: withSavedResult(key.b, saved) };
    case 'not':
      return { op: 'not', key: withSavedResult(key.key, saved) };
    case 'seq':
    case 'uid':
      return isSavedResult(key.set) ? { op: 'uid', set: uidRanges(saved) } : key;
    default:
      return key;
  }
}
