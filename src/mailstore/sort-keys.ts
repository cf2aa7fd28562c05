// What IMAP's SORT and THREAD (RFC 5256, SORT=DISPLAY RFC 5957) order and link messages by, computed once
// from the header block when a message is stored and kept beside its summary (`mail_messages.sort_keys`,
// migration 029), so that a SORT or THREAD over a folder reads these few bytes a message and parses nothing.
// Strings are kept folded (`collationKey`), ready to compare. Pure; no I/O.
import libmime from 'libmime';
import addressparser from 'nodemailer/lib/addressparser';
import { parseHeaders, type HeaderMap } from './headers.js';

/** The stored keys of one message (JSON in `mail_messages.sort_keys`; short names: one per message row). */
export interface SortKeys {
  /** Sent date (the Date header) in ms since the epoch, UTC; null when missing or unparseable (RFC 5256 §2.2). */
  d: number | null;
  /** Base subject (RFC 5256 §2.1), folded. */
  s: string;
  /** 1 when extracting the base subject removed a reply or forward marker (RFC 5256 §3 REFERENCES step 5). */
  r: 0 | 1;
  /** addr-mailbox (local part) of the first From, To and Cc address, folded; '' when none (RFC 5256 §3). */
  f: string;
  t: string;
  c: string;
  /** DISPLAYFROM / DISPLAYTO (RFC 5957 §3): the first address's display name, else its addr-spec, folded. */
  df: string;
  dt: string;
  /** Message-ID without its angle brackets; null when missing or not a valid msg-id. */
  m: string | null;
  /** The parent chain: References' msg-ids in order, else the first of In-Reply-To (RFC 5256 §3 REFERENCES step 1). */
  x: string[];
}

/**
 * The i;unicode-casemap comparator's key (RFC 5051), near enough: titlecase (upper case here) and the
 * decomposition of each character; two strings compare by this key's code units.
 */
export function collationKey(text: string): string {
  return text.toUpperCase().normalize('NFKD');
}

function decodeWords(value: string): string {
  try {
    return libmime.decodeWords(value);
  } catch {
    return value;
  }
}

/** `[` blob `]` *WSP at `i` (RFC 5256 subj-blob): the index after it, or -1. */
function blobEnd(s: string, i: number): number {
  if (s[i] !== '[') return -1;
  const close = s.indexOf(']', i + 1);
  if (close === -1 || s.lastIndexOf('[', close) !== i) return -1;
  let j = close + 1;
  while (s[j] === ' ') j++;
  return j;
}

/** subj-refwd at `i`: ("re" / "fw" / "fwd") *WSP [subj-blob] ":" — the index after it, or -1. */
function refwdEnd(s: string, i: number): number {
  const head = s.slice(i, i + 3).toLowerCase();
  let j: number;
  if (head.startsWith('re')) j = i + 2;
  else if (head === 'fwd') j = i + 3;
  else if (head.startsWith('fw')) j = i + 2;
  else return -1;
  while (s[j] === ' ') j++;
  const b = blobEnd(s, j);
  if (b !== -1) j = b;
  return s[j] === ':' ? j + 1 : -1;
}

/** subj-leader at `i`: (*subj-blob subj-refwd) / WSP — the index after it, or -1. */
function leaderEnd(s: string, i: number): number {
  if (s[i] === ' ') return i + 1;
  let j = i;
  for (;;) {
    const r = refwdEnd(s, j);
    if (r !== -1) return r;
    const b = blobEnd(s, j);
    if (b === -1) return -1;
    j = b;
  }
}

/**
 * The base subject of RFC 5256 §2.1 (not folded) and whether it was a reply or forward: encoded words
 * decoded, white space collapsed, then trailing `(fwd)` and spaces, leading `Re:`/`Fw:`/`Fwd:` (with blobs
 * before or inside them) and leading `[blob]`s (unless nothing would be left) removed, and a `[fwd: …]`
 * wrapper unwrapped, until none is left.
 */
export function baseSubject(subject: string | null): { base: string; replyOrForward: boolean } {
  let s = decodeWords(subject ?? '').replace(/[\t\r\n ]+/g, ' ');
  let replyOrForward = false;
  for (;;) {
    // (2) subj-trailer: "(fwd)" / WSP, repeatedly.
    for (;;) {
      if (s.endsWith(' ')) s = s.slice(0, -1);
      else if (s.length >= 5 && s.slice(-5).toLowerCase() === '(fwd)') {
        s = s.slice(0, -5);
        replyOrForward = true;
      } else break;
    }
    // (3)–(5) subj-leader, then a subj-blob that leaves a non-empty base, until neither is there.
    for (;;) {
      const l = leaderEnd(s, 0);
      if (l !== -1) {
        if (s[0] !== ' ') replyOrForward = true;
        s = s.slice(l);
        continue;
      }
      const b = blobEnd(s, 0);
      if (b !== -1 && b < s.length) {
        s = s.slice(b);
        continue;
      }
      break;
    }
    // (6) "[fwd:" … "]": unwrap and start again from (2).
    if (s.length >= 6 && s.slice(0, 5).toLowerCase() === '[fwd:' && s.endsWith(']')) {
      s = s.slice(5, -1);
      replyOrForward = true;
      continue;
    }
    return { base: s, replyOrForward };
  }
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const ZONES: Record<string, number> = { UT: 0, GMT: 0, Z: 0, EST: -300, EDT: -240, CST: -360, CDT: -300, MST: -420, MDT: -360, PST: -480, PDT: -420 };

/**
 * A Date header's instant (RFC 5322 §3.3 with the obsolete forms of §4.3: two-digit years, named zones,
 * comments), in ms since the epoch; null when it is not a date.
 */
export function parseSentDate(value: string | null): number | null {
  if (!value) return null;
  const text = value.replace(/\([^()]*\)/g, ' ');
  const m = /(\d{1,2})\s+([A-Za-z]{3})[A-Za-z]*\.?\s+(\d{2,4})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([+-]\d{4}|[A-Za-z]{1,5})?/.exec(text);
  if (m) {
    const month = MONTHS.indexOf(m[2]!.toLowerCase());
    let year = Number(m[3]);
    if (m[3]!.length < 4) year += year < 50 ? 2000 : 1900;
    let zone = 0;
    const z = m[7];
    if (z && /^[+-]\d{4}$/.test(z)) zone = (z[0] === '-' ? -1 : 1) * (Number(z.slice(1, 3)) * 60 + Number(z.slice(3)));
    else if (z) zone = ZONES[z.toUpperCase()] ?? 0;
    const day = Number(m[1]);
    const hour = Number(m[4]);
    const minute = Number(m[5]);
    const second = Number(m[6] ?? 0);
    if (month >= 0 && day >= 1 && day <= 31 && hour <= 23 && minute <= 59 && second <= 60) {
      return Date.UTC(year, month, day, hour, minute, second) - zone * 60000;
    }
  }
  const t = Date.parse(text);
  return Number.isNaN(t) ? null : t;
}

/** The msg-ids of a Message-ID, References or In-Reply-To value, in order, without their angle brackets. */
export function messageIds(value: string | null): string[] {
  if (!value) return [];
  const out: string[] = [];
  for (const m of value.replace(/\([^()]*\)/g, '').matchAll(/<([^<>]*)>/g)) {
    const id = m[1]!.replace(/\s+/g, '');
    if (/^[^@]+@[^@]+$/.test(id)) out.push(id);
  }
  return out;
}

type Parsed = { name: string; address?: string; group?: Parsed[] };

/** The first mailbox of an address list (a group's first member), or null. */
function firstMailbox(list: Parsed[]): { name: string; address: string } | null {
  for (const a of list) {
    if (a.group) {
      const inner = firstMailbox(a.group);
      if (inner) return inner;
    } else if (a.address) return { name: a.name, address: a.address };
  }
  return null;
}

function firstAddress(values: string[] | undefined): { name: string; address: string } | null {
  if (!values?.length) return null;
  try {
    return firstMailbox(addressparser(values.join(', ')) as Parsed[]);
  } catch {
    return null;
  }
}

/** addr-mailbox: the local part of `local@domain` (the whole when there is no `@`). */
const localPart = (address: string) => {
  const at = address.lastIndexOf('@');
  return at === -1 ? address : address.slice(0, at);
};

/** RFC 5957 §3: the display name, decoded, when there is a non-empty one; else the addr-spec. */
const displayOf = (a: { name: string; address: string }) => {
  const name = decodeWords(a.name).trim();
  return name || a.address;
};

/** The sort and thread keys of a raw message (its header block only is read). */
export function sortKeysOf(source: Buffer | HeaderMap): SortKeys {
  // A message's source, or its header fields already read (the delivery writer reads them once for the summary too).
  const fields = source instanceof Map ? source : parseHeaders(source);
  const first = (name: string) => fields.get(name)?.[0] ?? null;
  const { base, replyOrForward } = baseSubject(first('subject'));
  const from = firstAddress(fields.get('from'));
  const to = firstAddress(fields.get('to'));
  const cc = firstAddress(fields.get('cc'));
  const references = messageIds(first('references'));
  return {
    d: parseSentDate(first('date')),
    s: collationKey(base),
    r: replyOrForward ? 1 : 0,
    f: from ? collationKey(localPart(from.address)) : '',
    t: to ? collationKey(localPart(to.address)) : '',
    c: cc ? collationKey(localPart(cc.address)) : '',
    df: from ? collationKey(displayOf(from)) : '',
    dt: to ? collationKey(displayOf(to)) : '',
    m: messageIds(first('message-id'))[0] ?? null,
    x: references.length ? references : messageIds(first('in-reply-to')).slice(0, 1),
  };
}
