// Modified UTF-7 mailbox names (RFC 3501 §5.1.3): what IMAP4rev1 clients send and expect in LIST.

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

const MODIFIED_BASE64 = /^[A-Za-z0-9+,]+$/;

/**
 * Whether `raw` (a mailbox name as sent) is modified UTF-7 that decodes back to itself once encoded again
 * (RFC 3501 §5.1.3): printable US-ASCII but `&` as itself, `&-` for `&`, and `&…-` shifts in modified BASE64
 * holding only what may not be written as itself. A name with raw 8-bit or control characters (a client
 * sending UTF-8 without UTF8=ACCEPT) is not: created as is, it would be listed under another spelling.
 */
export function isModifiedUtf7(raw: string): boolean {
  for (let i = 0; i < raw.length; i++) {
    const code = raw.charCodeAt(i);
    if (code < 0x20 || code > 0x7e) return false;
    if (raw[i] !== '&') continue;
    const end = raw.indexOf('-', i + 1);
    if (end < 0) return false;
    const b64 = raw.slice(i + 1, end);
    if (b64 !== '') {
      if (!MODIFIED_BASE64.test(b64) || b64.length % 4 === 1) return false;
      const bytes = Buffer.from(b64.replace(/,/g, '/'), 'base64');
      if (bytes.length % 2 !== 0) return false;
      for (let j = 0; j < bytes.length; j += 2) {
        const unit = bytes.readUInt16BE(j);
        if (unit >= 0x20 && unit <= 0x7e) return false; // printable ASCII must stand for itself
      }
    }
    i = end;
  }
  return encodeMailboxName(decodeMailboxName(raw)) === raw;
}
