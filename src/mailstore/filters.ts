// Mailbox filters at delivery (Mailboxes API `PUT /mailboxes/{id}/filters`): pure. The MX listener reads a
// mailbox's rules (`store.getFilters`), plans, stores the plan's targets and sends its forwards.
//
// Semantics (where the API leaves room):
// - Rules run in position order; a rule matches when all its conditions hold (no conditions: always).
// - Every matching rule's actions apply; `stop` ends evaluation after a matching rule.
// - `move`: the last one wins; `mark_read` adds \Seen; `flag` adds \Flagged; `forward` collects addresses
//   (deduplicated, in order); `discard` stores nothing (forwards still go out, as Sieve's redirect + discard).
// - Text comparisons ignore case. `from` matches the From header, `to` the To and Cc headers (as mail
//   clients' "to" filters do). Values are compared after MIME encoded-word decoding. `equals` on from/to
//   holds when any address equals the value, or the whole header does. `matches` is a Sieve-style glob
//   (`*` any run, `?` one character; RFC 5228 :matches), never a regular expression.
// - `size` compares the raw message size in bytes.
import { parseAddressList, parseHeaders, type HeaderMap } from './headers.js';
import type { DeliveryPlan, DeliveryTarget, FilterRule } from './types.js';

export interface FilterMessage {
  /** A parsed header map (lower-case names), a plain object of them, or the raw header block. */
  headers: HeaderMap | Record<string, string | string[] | undefined> | string | Buffer;
  size: number;
}

type Condition = FilterRule['conditions'][number];

function toMap(headers: FilterMessage['headers']): HeaderMap {
  if (headers instanceof Map) return headers;
  if (typeof headers === 'string' || Buffer.isBuffer(headers)) return parseHeaders(headers);
  const map: HeaderMap = new Map();
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) map.set(k.toLowerCase(), Array.isArray(v) ? v : [v]);
  return map;
}

/** RFC 2047 encoded words decoded (unknown charsets left as written). */
export function decodeWords(value: string): string {
  return value
    .replace(/(=\?[^?\s]+\?[BbQq]\?[^?\s]*\?=)\s+(?==\?[^?\s]+\?[BbQq]\?[^?\s]*\?=)/g, '$1')
    .replace(/=\?([^?\s*]+)(?:\*[^?\s]*)?\?([BbQq])\?([^?\s]*)\?=/g, (word, charset: string, enc: string, text: string) => {
      try {
        const bytes =
          enc.toUpperCase() === 'B'
            ? Buffer.from(text, 'base64')
            : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1');
        return new TextDecoder(charset.toLowerCase()).decode(bytes);
      } catch {
        return word;
      }
    });
}

function glob(pattern: string, text: string): boolean {
  // Iterative wildcard match with backtracking on the last `*`: linear-ish, no regex.
  const p = pattern.toLowerCase();
  const t = text.toLowerCase();
  let pi = 0;
  let ti = 0;
  let star = -1;
  let mark = 0;
  while (ti < t.length) {
    if (pi < p.length && (p[pi] === '?' || p[pi] === t[ti])) {
      pi++;
      ti++;
    } else if (pi < p.length && p[pi] === '*') {
      star = pi++;
      mark = ti;
    } else if (star !== -1) {
      pi = star + 1;
      ti = ++mark;
    } else return false;
  }
  while (pi < p.length && p[pi] === '*') pi++;
  return pi === p.length;
}

function compare(op: 'contains' | 'equals' | 'matches', values: string[], wanted: string): boolean {
  const w = wanted.toLowerCase();
  switch (op) {
    case 'contains':
      return values.some((v) => v.toLowerCase().includes(w));
    case 'equals':
      return values.some((v) => v.toLowerCase() === w);
    case 'matches':
      return values.some((v) => glob(wanted, v));
  }
}

function holds(c: Condition, headers: HeaderMap, size: number): boolean {
  switch (c.field) {
    case 'size':
      return c.op === 'gt' ? size > c.value : size < c.value;
    case 'subject':
      return compare(c.op, (headers.get('subject') ?? []).map(decodeWords), c.value);
    case 'from':
    case 'to': {
      const raw = c.field === 'from' ? (headers.get('from') ?? []) : [...(headers.get('to') ?? []), ...(headers.get('cc') ?? [])];
      const values = raw.map(decodeWords);
      const addresses = raw.flatMap((v) => parseAddressList(v).map((a) => a.address));
      return compare(c.op, [...values, ...addresses], c.value);
    }
    case 'header': {
      const values = headers.get(c.name.toLowerCase());
      if (c.op === 'exists') return values !== undefined;
      return values !== undefined && compare(c.op, values.map(decodeWords), c.value ?? '');
    }
  }
}

export function planDelivery(rules: FilterRule[], message: FilterMessage, base: DeliveryTarget): DeliveryPlan {
  const headers = toMap(message.headers);
  let folder = base.folder;
  const flags = [...(base.flags ?? [])];
  const forwards: string[] = [];
  let discard = false;
  const addFlag = (f: string) => {
    if (!flags.some((x) => x.toLowerCase() === f.toLowerCase())) flags.push(f);
  };
  for (const rule of rules) {
    if (!rule.conditions.every((c) => holds(c, headers, message.size))) continue;
    for (const action of rule.actions) {
      switch (action.type) {
        case 'move':
          folder = action.folder;
          break;
        case 'mark_read':
          addFlag('\\Seen');
          break;
        case 'flag':
          addFlag('\\Flagged');
          break;
        case 'forward':
          if (!forwards.some((f) => f.toLowerCase() === action.to.toLowerCase())) forwards.push(action.to);
          break;
        case 'discard':
          discard = true;
          break;
      }
    }
    if (rule.stop) break;
  }
  if (discard) return { targets: [], forwards };
  const target: DeliveryTarget = { mailboxId: base.mailboxId };
  if (folder !== undefined) target.folder = folder;
  if (flags.length > 0) target.flags = flags;
  return { targets: [target], forwards };
}
