// SORT and THREAD arguments (RFC 5256 §4 sort-criteria, thread-alg; RFC 5957 DISPLAYFROM/DISPLAYTO) and
// the THREAD response's nested lists (RFC 5256 §4 thread-list). No I/O.
import { ParseError, Tokens, type Token } from './tokens.js';

export const SORT_KEYS = ['ARRIVAL', 'CC', 'DATE', 'FROM', 'SIZE', 'SUBJECT', 'TO', 'DISPLAYFROM', 'DISPLAYTO'] as const;
export type SortKeyName = (typeof SORT_KEYS)[number];

export interface SortCriterion {
  key: SortKeyName;
  reverse: boolean;
}

export const THREAD_ALGORITHMS = ['ORDEREDSUBJECT', 'REFERENCES'] as const;
export type ThreadAlgorithm = (typeof THREAD_ALGORITHMS)[number];

/** `(sort-criterion *(SP sort-criterion))`: each key with the REVERSE before it. */
export function parseSortCriteria(list: Token[]): SortCriterion[] {
  const ts = new Tokens(list);
  const out: SortCriterion[] = [];
  while (!ts.done) {
    let word = ts.atom('sort key').toUpperCase();
    const reverse = word === 'REVERSE';
    if (reverse) word = ts.atom('sort key').toUpperCase();
    if (!(SORT_KEYS as readonly string[]).includes(word)) throw new ParseError(`Unknown sort key ${word}`);
    out.push({ key: word as SortKeyName, reverse });
  }
  if (out.length === 0) throw new ParseError('Missing sort criteria');
  return out;
}

export function parseThreadAlgorithm(word: string): ThreadAlgorithm {
  const alg = word.toUpperCase();
  if (!(THREAD_ALGORITHMS as readonly string[]).includes(alg)) throw new ParseError(`Unknown thread algorithm ${word}`);
  return alg as ThreadAlgorithm;
}

/** A thread tree node: a message (its number as answered: sequence number or UID) or a dummy (null). */
export interface ThreadNode {
  id: number | null;
  children: ThreadNode[];
}

/**
 * One thread-list: `(` thread-members [thread-nested] `)` or `(` thread-nested `)`. A run of single children is
 * written as members (`(3 6 …`), two or more children each as their own thread-list (`(4 23)(44 7 96)`).
 * Iterative over the runs, so a long chain costs no stack.
 */
export function formatThread(node: ThreadNode): string {
  let out = '(';
  let cur = node;
  let first = true;
  while (cur.id !== null || cur.children.length === 1) {
    if (cur.id !== null) {
      out += (first ? '' : ' ') + cur.id;
      first = false;
    }
    if (cur.children.length !== 1) break;
    cur = cur.children[0]!;
  }
  if (cur.children.length > 1) {
    if (!first) out += ' ';
    for (const c of cur.children) out += formatThread(c);
  }
  return out + ')';
}
