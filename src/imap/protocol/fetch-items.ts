// FETCH attributes (RFC 3501 §6.4.5, §9 fetch-att; MODSEQ from RFC 7162; BINARY, BINARY.PEEK, BINARY.SIZE from
// RFC 3516 §4.2; EMAILID/THREADID RFC 8474, SAVEDATE RFC 8514), macros expanded.
import { ParseError, parseNumber, type Token } from './tokens.js';

export interface Section {
  /** Part path, e.g. [1, 2] for `1.2`; empty for the whole message. */
  path: number[];
  specifier: 'HEADER' | 'HEADER.FIELDS' | 'HEADER.FIELDS.NOT' | 'TEXT' | 'MIME' | null;
  /** Field names for HEADER.FIELDS(.NOT), as the client wrote them. */
  fields: string[];
}

export type SimpleItem =
  | 'UID'
  | 'FLAGS'
  | 'INTERNALDATE'
  | 'RFC822.SIZE'
  | 'ENVELOPE'
  | 'BODYSTRUCTURE'
  | 'BODY'
  | 'MODSEQ'
  | 'RFC822'
  | 'RFC822.HEADER'
  | 'RFC822.TEXT'
  | 'EMAILID' // RFC 8474
  | 'THREADID'
  | 'SAVEDATE'; // RFC 8514

export type FetchItem =
  | { kind: 'simple'; name: SimpleItem }
  | { kind: 'section'; peek: boolean; section: Section; partial: { start: number; length: number } | null; label: string }
  /** BINARY[path]<partial>, BINARY.PEEK, or BINARY.SIZE[path] (`size`); `label` is the part number as written back. */
  | { kind: 'binary'; peek: boolean; size: boolean; path: number[]; partial: { start: number; length: number } | null; label: string };

const SIMPLE = new Set<string>(['UID', 'FLAGS', 'INTERNALDATE', 'RFC822.SIZE', 'ENVELOPE', 'BODYSTRUCTURE', 'BODY', 'MODSEQ', 'RFC822', 'RFC822.HEADER', 'RFC822.TEXT', 'EMAILID', 'THREADID', 'SAVEDATE']);
const MACROS: Record<string, SimpleItem[]> = {
  ALL: ['FLAGS', 'INTERNALDATE', 'RFC822.SIZE', 'ENVELOPE'],
  FAST: ['FLAGS', 'INTERNALDATE', 'RFC822.SIZE'],
  FULL: ['FLAGS', 'INTERNALDATE', 'RFC822.SIZE', 'ENVELOPE', 'BODY'],
};

const SECTION_ITEM = /^(BODY|BODY\.PEEK)\[([^\]]*)\](?:<(\d+)\.(\d+)>)?$/i;
/** section-binary (RFC 3516 §6): a part number or nothing, never HEADER, TEXT or MIME. */
const BINARY_ITEM = /^(BINARY|BINARY\.PEEK|BINARY\.SIZE)\[((?:[1-9]\d*)(?:\.[1-9]\d*)*)?\](?:<(\d+)\.(\d+)>)?$/i;

/** header-list (RFC 3501 §9): astrings, i.e. atoms or quoted strings with `\\` and `\"` escapes. */
function headerList(text: string): string[] {
  const fields: string[] = [];
  const item = /\s*(?:"((?:[^"\\]|\\["\\])*)"|([^\s"]+))/y;
  let end = 0;
  for (let m = item.exec(text); m; m = item.exec(text)) {
    fields.push(m[1] !== undefined ? m[1].replace(/\\(["\\])/g, '$1') : m[2]!);
    end = item.lastIndex;
  }
  if (text.slice(end).trim() !== '') throw new ParseError('Bad header field list');
  return fields;
}

export function parseSection(text: string): Section {
  const path: number[] = [];
  let rest = text;
  while (/^\d/.test(rest)) {
    const m = /^(\d+)(\.|$)/.exec(rest);
    if (!m) throw new ParseError(`Bad section "${text}"`);
    path.push(parseNumber(m[1]!, 'section part'));
    if (path[path.length - 1] === 0) throw new ParseError(`Bad section "${text}"`);
    rest = rest.slice(m[0].length);
  }
  if (rest === '') return { path, specifier: null, fields: [] };
  const m = /^(HEADER\.FIELDS\.NOT|HEADER\.FIELDS|HEADER|TEXT|MIME)(?:\s+\((.*)\))?$/i.exec(rest);
  if (!m) throw new ParseError(`Bad section "${text}"`);
  const specifier = m[1]!.toUpperCase() as Section['specifier'];
  const isFields = specifier === 'HEADER.FIELDS' || specifier === 'HEADER.FIELDS.NOT';
  if (isFields !== (m[2] !== undefined)) throw new ParseError(`Bad section "${text}"`);
  if (specifier === 'MIME' && path.length === 0) throw new ParseError('MIME needs a part number');
  const fields = isFields ? headerList(m[2]!) : [];
  if (isFields && fields.length === 0) throw new ParseError('Empty header field list');
  return { path, specifier, fields };
}

function parseItem(t: Token, out: FetchItem[]): void {
  if (t.type !== 'atom') throw new ParseError('Bad fetch attribute');
  const upper = t.value.toUpperCase();
  if (SIMPLE.has(upper)) {
    out.push({ kind: 'simple', name: upper as SimpleItem });
    return;
  }
  if (upper.startsWith('BINARY')) {
    const b = BINARY_ITEM.exec(t.value);
    if (!b) throw new ParseError(`Bad fetch attribute "${t.value}"`);
    const kind = b[1]!.toUpperCase();
    const partial = b[3] !== undefined ? { start: parseNumber(b[3], 'partial'), length: parseNumber(b[4]!, 'partial') } : null;
    if (partial && (kind === 'BINARY.SIZE' || partial.length === 0)) throw new ParseError('Bad partial');
    const label = b[2] ?? '';
    const path = label ? label.split('.').map((n) => parseNumber(n, 'section part')) : [];
    out.push({ kind: 'binary', peek: kind !== 'BINARY', size: kind === 'BINARY.SIZE', path, partial, label });
    return;
  }
  const m = SECTION_ITEM.exec(t.value);
  if (!m) throw new ParseError(`Unknown fetch attribute "${t.value}"`);
  const section = parseSection(m[2]!);
  const partial = m[3] !== undefined ? { start: parseNumber(m[3], 'partial'), length: parseNumber(m[4]!, 'partial') } : null;
  if (partial && partial.length === 0) throw new ParseError('Partial length must be positive');
  out.push({ kind: 'section', peek: m[1]!.toUpperCase() === 'BODY.PEEK', section, partial, label: m[2]!.toUpperCase() });
}

/** A FETCH's attribute argument: a macro, one attribute, or a parenthesised list of attributes. */
export function parseFetchItems(t: Token): FetchItem[] {
  const out: FetchItem[] = [];
  if (t.type === 'atom' && MACROS[t.value.toUpperCase()]) {
    for (const name of MACROS[t.value.toUpperCase()]!) out.push({ kind: 'simple', name });
  } else if (t.type === 'list') {
    if (t.items.length === 0) throw new ParseError('Empty fetch attribute list');
    for (const item of t.items) parseItem(item, out);
  } else {
    parseItem(t, out);
  }
  return out;
}
