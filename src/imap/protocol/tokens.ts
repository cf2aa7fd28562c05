// Tokens of a framed command (RFC 3501 §4, §9): atoms (also numbers, flags, sequence sets and fetch
// attributes such as `BODY.PEEK[HEADER.FIELDS (A B)]<0.100>`), strings (quoted or literal) and
// parenthesised lists. No I/O.
import { MAX_NESTING_DEPTH } from './limits.js';
import type { Part } from './reader.js';

export type Token =
  | { type: 'atom'; value: string }
  | { type: 'string'; value: string; data?: Buffer; /** A literal8 `~{n}` (RFC 3516 §4.4). */ binary?: boolean }
  | { type: 'list'; items: Token[] };

export class ParseError extends Error {
  override name = 'ParseError';
}

const DELIMS = new Set([' ', '(', ')', '"']);

/**
 * The FETCH attributes whose `[section]` may hold spaces and parentheses (`BODY.PEEK[HEADER.FIELDS (A B)]`): their
 * brackets span delimiters. Anywhere else `[` is an ATOM-CHAR and `]` an ASTRING-CHAR (RFC 3501 §9), as in a
 * mailbox name `a[b`.
 */
const SECTIONED = /^(BODY|BODY\.PEEK|BINARY|BINARY\.PEEK|BINARY\.SIZE)$/i;

/** Whether a text part leaves a `[` open (outside quoted strings): a section whose brackets go on past it. */
function opensBracket(text: string): boolean {
  let open = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
    } else if (c === '[') open = true;
    else if (c === ']') open = false;
  }
  return open;
}

/**
 * A literal inside a section's brackets (`BODY[HEADER.FIELDS ({4}\r\nFrom)]`: header-fld-name is an astring,
 * RFC 3501 §9) joins the bracketed text as a quoted string, which is how the section parser reads field
 * names; the bracketed attribute stays one atom. A literal that cannot be a quoted string (CR, LF, NUL) is
 * left as it is (and the unterminated bracket is then a syntax error).
 */
function joinBracketLiterals(parts: Part[]): Part[] {
  const out: Part[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const prev = out[out.length - 1];
    const literal = part.kind === 'literal' ? part.data.toString('utf8') : '';
    const next = parts[i + 1];
    if (part.kind === 'literal' && prev?.kind === 'text' && next?.kind === 'text' && opensBracket(prev.text) && !/[\r\n\0]/.test(literal)) {
      out[out.length - 1] = { kind: 'text', text: `${prev.text}"${literal.replace(/[\\"]/g, '\\$&')}"${next.text}` };
      i++;
    } else {
      out.push(part);
    }
  }
  return out;
}

export function tokenize(parts: Part[]): Token[] {
  const root: Token[] = [];
  const stack: Token[][] = [root];
  const top = () => stack[stack.length - 1]!;
  for (const part of joinBracketLiterals(parts)) {
    if (part.kind === 'literal') {
      // literal8 (RFC 3516): the `~` before its `{n}` was read as an atom of its own.
      const list = top();
      const last = list[list.length - 1];
      const binary = last?.type === 'atom' && last.value === '~';
      if (binary) list.pop();
      list.push({ type: 'string', value: part.data.toString('utf8'), data: part.data, ...(binary ? { binary } : {}) });
      continue;
    }
    const s = part.text;
    let i = 0;
    while (i < s.length) {
      const c = s[i]!;
      if (c === ' ') {
        i++;
      } else if (c === '(') {
        // Readers of the tree recurse into lists: a few thousand levels would overflow the stack.
        if (stack.length > MAX_NESTING_DEPTH) throw new ParseError('Parenthesised lists nested too deeply');
        const list: Token = { type: 'list', items: [] };
        top().push(list);
        stack.push(list.items);
        i++;
      } else if (c === ')') {
        if (stack.length === 1) throw new ParseError('Unbalanced parenthesis');
        stack.pop();
        i++;
      } else if (c === '"') {
        let out = '';
        i++;
        for (;;) {
          if (i >= s.length) throw new ParseError('Unterminated quoted string');
          const d = s[i]!;
          if (d === '\\') {
            const e = s[i + 1];
            if (e !== '\\' && e !== '"') throw new ParseError('Bad escape in quoted string');
            out += e;
            i += 2;
          } else if (d === '"') {
            i++;
            break;
          } else {
            out += d;
            i++;
          }
        }
        top().push({ type: 'string', value: out });
      } else {
        let j = i;
        while (j < s.length && !DELIMS.has(s[j]!)) {
          if (s[j] === '[' && SECTIONED.test(s.slice(i, j))) {
            const close = s.indexOf(']', j);
            if (close === -1) throw new ParseError('Unterminated [');
            j = close + 1;
          } else {
            j++;
          }
        }
        const value = s.slice(i, j);
        if (/[\x00-\x1f\x7f]/.test(value)) throw new ParseError('Control character in atom');
        top().push({ type: 'atom', value });
        i = j;
      }
    }
  }
  if (stack.length !== 1) throw new ParseError('Unbalanced parenthesis');
  return root;
}

/** A cursor over a token list with the typed readers the command grammars need. */
export class Tokens {
  private i = 0;
  constructor(private readonly items: Token[]) {}

  get done(): boolean {
    return this.i >= this.items.length;
  }
  peek(): Token | undefined {
    return this.items[this.i];
  }
  next(what: string): Token {
    const t = this.items[this.i++];
    if (!t) throw new ParseError(`Missing ${what}`);
    return t;
  }
  end(): void {
    if (!this.done) throw new ParseError('Unexpected extra arguments');
  }
  atom(what: string): string {
    const t = this.next(what);
    if (t.type !== 'atom') throw new ParseError(`Expected ${what}`);
    return t.value;
  }
  /** astring: atom or string. */
  astring(what: string): string {
    const t = this.next(what);
    if (t.type === 'list') throw new ParseError(`Expected ${what}`);
    return t.value;
  }
  /** A string or NIL. */
  nstring(what: string): string | null {
    const t = this.next(what);
    if (t.type === 'atom' && t.value.toUpperCase() === 'NIL') return null;
    if (t.type === 'list') throw new ParseError(`Expected ${what}`);
    return t.value;
  }
  number(what: string): number {
    return parseNumber(this.atom(what), what);
  }
  list(what: string): Token[] {
    const t = this.next(what);
    if (t.type !== 'list') throw new ParseError(`Expected ${what} list`);
    return t.items;
  }
  optionalList(): Token[] | null {
    const t = this.peek();
    if (t?.type === 'list') {
      this.i++;
      return t.items;
    }
    return null;
  }
  /** Consumes the next token when it is the given atom (case-insensitive). */
  accept(atom: string): boolean {
    const t = this.peek();
    if (t?.type === 'atom' && t.value.toUpperCase() === atom) {
      this.i++;
      return true;
    }
    return false;
  }
}

export function parseNumber(value: string, what: string, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^\d{1,16}$/.test(value)) throw new ParseError(`Expected a number for ${what}`);
  const n = Number(value);
  if (n > max) throw new ParseError(`Number out of range for ${what}`);
  return n;
}
