// RFC 5322 address lists as IMAP's ENVELOPE wants them (RFC 3501 §7.4.2): display names raw (encoded
// words kept), groups as start/end markers. Lenient: whatever does not parse becomes a bare mailbox.

export type EnvelopeAddress =
  | { kind: 'mailbox'; name: string | null; mailbox: string; host: string | null }
  | { kind: 'group-start'; name: string }
  | { kind: 'group-end' };

interface Tok {
  t: 'word' | 'quoted' | 'comment' | 'special';
  v: string;
}

function lex(s: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') {
      i++;
    } else if (c === '"') {
      let v = '';
      i++;
      while (i < s.length && s[i] !== '"') {
        if (s[i] === '\\' && i + 1 < s.length) i++;
        v += s[i];
        i++;
      }
      i++;
      out.push({ t: 'quoted', v });
    } else if (c === '(') {
      let depth = 1;
      let v = '';
      i++;
      while (i < s.length && depth > 0) {
        if (s[i] === '\\' && i + 1 < s.length) {
          v += s[i + 1];
          i += 2;
          continue;
        }
        if (s[i] === '(') depth++;
        if (s[i] === ')') depth--;
        if (depth > 0) v += s[i];
        i++;
      }
      out.push({ t: 'comment', v });
    } else if ('<>,:;@'.includes(c)) {
      out.push({ t: 'special', v: c });
      i++;
    } else {
      let j = i;
      while (j < s.length && !' \t\r\n"(<>,:;@'.includes(s[j]!)) j++;
      out.push({ t: 'word', v: s.slice(i, j) });
      i = j;
    }
  }
  return out;
}

function splitAddr(addr: string): { mailbox: string; host: string | null } {
  const at = addr.lastIndexOf('@');
  if (at <= 0) return { mailbox: addr, host: null };
  return { mailbox: addr.slice(0, at), host: addr.slice(at + 1) };
}

function mailboxFrom(tokens: Tok[]): EnvelopeAddress | null {
  if (tokens.length === 0) return null;
  const lt = tokens.findIndex((t) => t.t === 'special' && t.v === '<');
  if (lt !== -1) {
    const gt = tokens.findIndex((t, i) => i > lt && t.t === 'special' && t.v === '>');
    const inner = tokens.slice(lt + 1, gt === -1 ? undefined : gt).filter((t) => t.t !== 'comment');
    // Drop an obsolete route (`<@a,@b:user@host>`).
    const colon = inner.findIndex((t) => t.t === 'special' && t.v === ':');
    const addrToks = colon === -1 ? inner : inner.slice(colon + 1);
    const addr = addrToks.map((t) => (t.t === 'quoted' ? `"${t.v}"` : t.v)).join('');
    const nameToks = tokens.slice(0, lt).filter((t) => t.t !== 'comment');
    const name = nameToks.map((t) => t.v).join(' ').trim();
    const { mailbox, host } = splitAddr(addr);
    return { kind: 'mailbox', name: name || null, mailbox, host };
  }
  const comment = tokens.find((t) => t.t === 'comment');
  const addr = tokens
    .filter((t) => t.t !== 'comment')
    .map((t) => (t.t === 'quoted' ? `"${t.v}"` : t.v))
    .join('');
  if (!addr) return null;
  const { mailbox, host } = splitAddr(addr);
  return { kind: 'mailbox', name: comment?.v.trim() || null, mailbox, host };
}

export function parseAddressList(value: string): EnvelopeAddress[] {
  const toks = lex(value);
  const out: EnvelopeAddress[] = [];
  let cur: Tok[] = [];
  let inAngle = false;
  let inGroup = false;
  const flush = () => {
    const m = mailboxFrom(cur);
    if (m) out.push(m);
    cur = [];
  };
  for (const t of toks) {
    if (t.t === 'special') {
      if (t.v === '<') inAngle = true;
      if (t.v === '>') inAngle = false;
      if (!inAngle && t.v === ',') {
        flush();
        continue;
      }
      if (!inAngle && t.v === ':' && !inGroup && !cur.some((x) => x.t === 'special' && x.v === '<')) {
        out.push({ kind: 'group-start', name: cur.map((x) => x.v).join(' ') });
        cur = [];
        inGroup = true;
        continue;
      }
      if (!inAngle && t.v === ';' && inGroup) {
        flush();
        out.push({ kind: 'group-end' });
        inGroup = false;
        continue;
      }
    }
    cur.push(t);
  }
  flush();
  if (inGroup) out.push({ kind: 'group-end' });
  return out;
}
