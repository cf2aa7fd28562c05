// Modified UTF-7 mailbox names (RFC 3501 §5.1.3): what IMAP4rev1 clients send and expect in LIST.
import { formatString } from './writer.js';

/** A mailbox name in a response: modified UTF-7, or UTF-8 as it is for a session that has it (IMAP4rev2, RFC 9051 §5.1). */
export function formatMailboxName(name: string, utf8: boolean): string {
  return utf8 ? formatString(name, true) : formatString(encodeMailboxName(name));
}

export function encodeMailboxName(name: string): string {
  let out = '';
  let pending = '';
  const flush = () => {
    if (!pending) return;
    const buf = Buffer.alloc(pending.length * 2);
    for (let i = 0; i < pending.length; i++) buf.writeUInt16BE(pending.charCodeAt(i), i * 2);
    out += '&' + buf.toString('base64').replace(/=+$/, '').replace(/\//g, ',') + '-';
    pending = '';
  };
  for (const ch of name) {
    const code = ch.charCodeAt(0);
    if (ch.length === 1 && code >= 0x20 && code <= 0x7e) {
      flush();
      out += ch === '&' ? '&-' : ch;
    } else {
      pending += ch;
    }
  }
  flush();
  return out;
}

export function decodeMailboxName(name: string): string {
  return name.replace(/&([^-]*)-/g, (_m, b64: string) => {
    if (b64 === '') return '&';
    const buf = Buffer.from(b64.replace(/,/g, '/'), 'base64');
    let s = '';
    for (let i = 0; i + 1 < buf.length; i += 2) s += String.fromCharCode(buf.readUInt16BE(i));
    return s;
  });
}

/**
 * Whether `raw` (a mailbox name as sent) is modified UTF-7 in its one spelling (RFC 3501 §5.1.3): decoded and
 * encoded again it is itself. That refuses raw 8-bit or control characters (a client sending UTF-8 without
 * UTF8=ACCEPT), an unterminated or malformed shift, printable ASCII inside a shift and split shifts: created as
 * sent, any of these would be listed under another spelling.
 */
export function isModifiedUtf7(raw: string): boolean {
  return encodeMailboxName(decodeMailboxName(raw)) === raw;
}
