// SEARCH keys (RFC 3501 §6.4.4, §9 search-key; CONDSTORE's MODSEQ, RFC 7162 §3.1.5; OBJECTID's EMAILID and THREADID,
// RFC 8474; SAVEDATE's SAVEDBEFORE/SAVEDON/SAVEDSINCE/SAVEDATESUPPORTED, RFC 8514) into a typed tree.
import { parseSequenceSet, isSequenceSet, type SequenceSet } from './sequence.js';
import { MAX_NESTING_DEPTH } from './limits.js';
import { ParseError, parseNumber, Tokens, type Token } from './tokens.js';

export type DateCmp = 'before' | 'on' | 'since';

export type SearchKey =
  | { op: 'all' }
  | { op: 'and'; keys: SearchKey[] }
  | { op: 'or'; a: SearchKey; b: SearchKey }
  | { op: 'not'; key: SearchKey }
  | { op: 'flag'; flag: string; present: boolean }
  | { op: 'new' }
  | { op: 'old' }
  | { op: 'recent' }
  | { op: 'seq'; set: SequenceSet }
  | { op: 'uid'; set: SequenceSet }
  | { op: 'larger' | 'smaller'; size: number }
  | { op: 'internaldate'; cmp: DateCmp; day: number }
  | { op: 'sentdate'; cmp: DateCmp; day: number }
  | { op: 'header'; field: string; value: string }
  | { op: 'body'; value: string }
  | { op: 'text'; value: string }
  | { op: 'modseq'; modseq: number }
  | { op: 'emailid' | 'threadid'; id: string } // RFC 8474 §4.3
  | { op: 'savedate'; cmp: DateCmp; day: number } // RFC 8514 §4.3
  | { op: 'savedatesupported' };

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/** `1-Feb-1994` → the UTC day number (days since the epoch). */
export function parseSearchDate(text: string): number {
  const m = /^(\d{1,2})-([A-Za-z]{3})-(\d{4})$/.exec(text);
  const month = m ? MONTHS.indexOf(m[2]!.toLowerCase()) : -1;
  if (!m || month < 0) throw new ParseError(`Bad date "${text}"`);
  const ms = Date.UTC(Number(m[3]), month, Number(m[1]));
  const d = new Date(ms);
  if (d.getUTCDate() !== Number(m[1])) throw new ParseError(`Bad date "${text}"`);
  return Math.floor(ms / 86400000);
}

const FLAG_KEYS: Record<string, [string, boolean]> = {
  ANSWERED: ['\\Answered', true],
  DELETED: ['\\Deleted', true],
  DRAFT: ['\\Draft', true],
  FLAGGED: ['\\Flagged', true],
  SEEN: ['\\Seen', true],
  UNANSWERED: ['\\Answered', false],
  UNDELETED: ['\\Deleted', false],
  UNDRAFT: ['\\Draft', false],
  UNFLAGGED: ['\\Flagged', false],
  UNSEEN: ['\\Seen', false],
};
const HEADER_KEYS: Record<string, string> = { BCC: 'bcc', CC: 'cc', FROM: 'from', SUBJECT: 'subject', TO: 'to' };
const DATE_KEYS: Record<string, [SearchKey['op'], DateCmp]> = {
  BEFORE: ['internaldate', 'before'],
  ON: ['internaldate', 'on'],
  SINCE: ['internaldate', 'since'],
  SENTBEFORE: ['sentdate', 'before'],
  SENTON: ['sentdate', 'on'],
  SENTSINCE: ['sentdate', 'since'],
  SAVEDBEFORE: ['savedate', 'before'],
  SAVEDON: ['savedate', 'on'],
  SAVEDSINCE: ['savedate', 'since'],
};

/** One search key; `depth` counts the lists, NOTs and ORs it is inside (parsing and matching recurse that deep). */
function parseKey(ts: Tokens, depth = 0): SearchKey {
  if (depth > MAX_NESTING_DEPTH) throw new ParseError('Search criteria nested too deeply');
  const t = ts.next('search key');
  if (t.type === 'list') {
    const inner = new Tokens(t.items);
    const keys: SearchKey[] = [];
    while (!inner.done) keys.push(parseKey(inner, depth + 1));
    if (keys.length === 0) throw new ParseError('Empty search key list');
    return keys.length === 1 ? keys[0]! : { op: 'and', keys };
  }
  if (t.type === 'string') throw new ParseError(`Unexpected string "${t.value}" in search`);
  const word = t.value.toUpperCase();
  if (isSequenceSet(t.value)) return { op: 'seq', set: parseSequenceSet(t.value) };
  const flag = FLAG_KEYS[word];
  if (flag) return { op: 'flag', flag: flag[0], present: flag[1] };
  const header = HEADER_KEYS[word];
  if (header) return { op: 'header', field: header, value: ts.astring('search string') };
  const date = DATE_KEYS[word];
  if (date) return { op: date[0] as 'internaldate', cmp: date[1], day: parseSearchDate(ts.astring('date')) };
  switch (word) {
    case 'ALL':
      return { op: 'all' };
    case 'NEW':
      return { op: 'new' };
    case 'OLD':
      return { op: 'old' };
    case 'RECENT':
      return { op: 'recent' };
    case 'KEYWORD':
      return { op: 'flag', flag: ts.atom('keyword'), present: true };
    case 'UNKEYWORD':
      return { op: 'flag', flag: ts.atom('keyword'), present: false };
    case 'HEADER': {
      const field = ts.astring('header field name');
      return { op: 'header', field: field.toLowerCase(), value: ts.astring('search string') };
    }
    case 'BODY':
      return { op: 'body', value: ts.astring('search string') };
    case 'TEXT':
      return { op: 'text', value: ts.astring('search string') };
    case 'LARGER':
      return { op: 'larger', size: ts.number('size') };
    case 'SMALLER':
      return { op: 'smaller', size: ts.number('size') };
    case 'UID':
      return { op: 'uid', set: parseSequenceSet(ts.atom('UID set')) };
    case 'NOT':
      return { op: 'not', key: parseKey(ts, depth + 1) };
    case 'OR': {
      const a = parseKey(ts, depth + 1);
      return { op: 'or', a, b: parseKey(ts, depth + 1) };
    }
    case 'EMAILID':
    case 'THREADID': {
      const id = ts.atom('objectid');
      if (!/^[A-Za-z0-9_-]{1,255}$/.test(id)) throw new ParseError(`Bad objectid "${id}"`);
      return { op: word === 'EMAILID' ? 'emailid' : 'threadid', id };
    }
    case 'SAVEDATESUPPORTED':
      return { op: 'savedatesupported' };
    case 'MODSEQ': {
      // MODSEQ [entry-name entry-type-req] mod-sequence-valzer
      const next = ts.peek();
      if (next?.type === 'string' || (next?.type === 'atom' && !/^\d+$/.test(next.value))) {
        ts.next('entry name');
        ts.atom('entry type');
      }
      return { op: 'modseq', modseq: parseNumber(ts.atom('mod-sequence'), 'MODSEQ') };
    }
    default:
      throw new ParseError(`Unknown search key "${t.value}"`);
  }
}

/** The whole criteria list of a SEARCH (after any CHARSET): an implicit AND. */
export function parseSearchKeys(tokens: Token[]): SearchKey {
  const ts = new Tokens(tokens);
  const keys: SearchKey[] = [];
  while (!ts.done) keys.push(parseKey(ts));
  if (keys.length === 0) throw new ParseError('Missing search criteria');
  return keys.length === 1 ? keys[0]! : { op: 'and', keys };
}

/** True when some key of the tree (through AND, OR and NOT) has one of these operators. */
function someKey(key: SearchKey, ops: ReadonlySet<SearchKey['op']>): boolean {
  switch (key.op) {
    case 'and':
      return key.keys.some((k) => someKey(k, ops));
    case 'or':
      return someKey(key.a, ops) || someKey(key.b, ops);
    case 'not':
      return someKey(key.key, ops);
    default:
      return ops.has(key.op);
  }
}

const CONTENT_OPS: ReadonlySet<SearchKey['op']> = new Set(['header', 'body', 'text', 'sentdate']);
const INTERNALDATE_OPS: ReadonlySet<SearchKey['op']> = new Set(['internaldate', 'savedate']);
const MODSEQ_OPS: ReadonlySet<SearchKey['op']> = new Set(['modseq']);

/** True when the key tree needs message contents (headers or body), not just the metadata. */
export const needsContent = (key: SearchKey): boolean => someKey(key, CONTENT_OPS);

/** True when the key tree has a THREADID key (RFC 8474 §6): the batch's thread ids are read then. */
const THREADID_OPS: ReadonlySet<SearchKey['op']> = new Set(['threadid']);
export const usesThreadId = (key: SearchKey): boolean => someKey(key, THREADID_OPS);

/** True when the key compares internal dates (the other metadata keys are answered from flags, size, MODSEQ). */
export const needsInternalDate = (key: SearchKey): boolean => someKey(key, INTERNALDATE_OPS);

/** True when the key has RECENT, NEW or OLD (not IMAP4rev2 keys, RFC 9051 Appendix E). */
export const usesRecent = (key: SearchKey): boolean => someKey(key, RECENT_OPS);
const RECENT_OPS: ReadonlySet<SearchKey['op']> = new Set(['recent', 'new', 'old']);

/** True when the key tests MODSEQ (CONDSTORE: the SEARCH answer then carries the highest MODSEQ). */
export const usesModseq = (key: SearchKey): boolean => someKey(key, MODSEQ_OPS);
