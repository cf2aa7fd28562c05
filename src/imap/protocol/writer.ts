// Formats IMAP response data (RFC 3501 §4, §9): NIL, numbers, atoms, quoted strings, literals and
// parenthesised lists. Handlers build values; only this file spells them as protocol text.

export class Atom {
  constructor(readonly value: string) {}
}
/** Bytes sent as a literal whatever they contain. */
export class Literal {
  constructor(readonly data: Buffer) {}
}
/** Already formatted protocol text (cached ENVELOPE/BODYSTRUCTURE). */
export class Raw {
  constructor(readonly text: string) {}
}

export type ImapValue = null | number | string | Atom | Literal | Raw | ImapValue[];

export const atom = (v: string) => new Atom(v);

const QUOTABLE = /^[\x20-\x7e]*$/;
/** IMAP4rev2 quoted strings may hold UTF-8 (RFC 9051 §9 QUOTED-CHAR). */
const QUOTABLE_UTF8 = /^[^\x00-\x1f\x7f]*$/;

/** A string as a quoted string when it can be one (with UTF-8 when `utf8`), else as a literal. */
export function formatString(s: string, utf8 = false): string {
  if (s.length <= 4096 && (utf8 ? QUOTABLE_UTF8 : QUOTABLE).test(s)) return '"' + (s.includes('\\') || s.includes('"') ? s.replace(/[\\"]/g, '\\$&') : s) + '"';
  return `{${Buffer.byteLength(s)}}\r\n${s}`;
}

export function formatValue(v: ImapValue): string {
  if (v === null) return 'NIL';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return formatString(v);
  if (v instanceof Atom) return v.value;
  if (v instanceof Raw) return v.text;
  if (v instanceof Literal) return `{${v.data.length}}\r\n${v.data.toString('latin1')}`;
  return '(' + v.map(formatValue).join(' ') + ')';
}

/**
 * Pieces of one response line as bytes: text is UTF-8, literals are copied byte for byte.
 * Used for FETCH responses that carry message bytes.
 */
export function encodeValues(values: ImapValue[], out: Buffer[], sep = ' '): void {
  let text = '';
  const flush = () => {
    if (text) out.push(Buffer.from(text, 'utf8'));
    text = '';
  };
  const walk = (v: ImapValue) => {
    if (v instanceof Literal) {
      text += `{${v.data.length}}\r\n`;
      flush();
      out.push(v.data);
    } else if (Array.isArray(v)) {
      text += '(';
      v.forEach((x, i) => {
        if (i) text += ' ';
        walk(x);
      });
      text += ')';
    } else {
      text += formatValue(v);
    }
  };
  values.forEach((v, i) => {
    if (i) text += sep;
    walk(v);
  });
  flush();
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** INTERNALDATE as date-time in a zone (minutes east of UTC; UTC by default): `"01-Mar-2026 10:00:00 +0000"`. */
export function formatInternalDate(at: Date, zone = 0): string {
  const d = new Date(at.getTime() + zone * 60000);
  const dd = String(d.getUTCDate()).padStart(2, '0');
  const t = [d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
  const z = Math.abs(zone);
  const offset = `${zone < 0 ? '-' : '+'}${String(Math.floor(z / 60)).padStart(2, '0')}${String(z % 60).padStart(2, '0')}`;
  return `"${dd}-${MONTHS[d.getUTCMonth()]}-${d.getUTCFullYear()} ${t} ${offset}"`;
}

export function formatFlags(flags: readonly string[]): string {
  return '(' + flags.join(' ') + ')';
}
