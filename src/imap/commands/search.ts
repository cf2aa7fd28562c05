// tag [UID] SEARCH [CHARSET c] keys (RFC 3501 §6.4.4; MODSEQ per RFC 7162 §3.1.5). Metadata keys are
// answered from the store's rows, read per batch; header/body keys read each candidate's source once.
import type { MessageState } from '../../mailstore/types.js';
import { parseAddressList } from '../mime/addresses.js';
import { header, parseMessage, type MimeNode } from '../mime/parse.js';
import { bodyText, decodeHeaderValue, headerText, partHeaderText } from '../mime/text.js';
import { FETCH_BATCH } from '../protocol/limits.js';
import { needsContent, needsInternalDate, usesModseq, type SearchKey } from '../protocol/search.js';
import { inSet } from '../protocol/sequence.js';
import { emailId, readRows } from './fetch.js';
import { no, ok, SELECTED, type CommandSpec } from './types.js';

interface Candidate {
  meta: MessageState & { internalDate?: Date; internalDateZone?: number; savedDate?: Date };
  seq: number;
  raw: Buffer | null;
  tree: MimeNode | null;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/** The day of a Date header as written (its own time zone, RFC 3501 §6.4.4 SENT*), in days since the epoch. */
export function sentDay(value: string | null): number | null {
  if (!value) return null;
  const m = /(\d{1,2})\s+([A-Za-z]{3})[a-z]*\s+(\d{2,4})/.exec(value);
  if (m) {
    const month = MONTHS.indexOf(m[2]!.toLowerCase());
    let year = Number(m[3]);
    if (year < 100) year += year < 50 ? 2000 : 1900;
    if (month >= 0) return Math.floor(Date.UTC(year, month, Number(m[1])) / 86400000);
  }
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : Math.floor(t / 86400000);
}

/**
 * The day of an internal date as FETCH INTERNALDATE shows it, in the zone the APPEND gave (else UTC), in days
 * since the epoch: RFC 3501 §6.4.4 compares the date "disregarding time and timezone".
 */
export function internalDay(at: Date, zone = 0): number {
  return Math.floor((at.getTime() + zone * 60000) / 86400000);
}

function compareDay(day: number | null, cmp: 'before' | 'on' | 'since', target: number): boolean {
  if (day === null) return false;
  return cmp === 'before' ? day < target : cmp === 'on' ? day === target : day >= target;
}

const contains = (hay: string, needle: string) => hay.toLowerCase().includes(needle.toLowerCase());

const ADDRESS_FIELDS = new Set(['from', 'to', 'cc', 'bcc']);

/**
 * An address field's addresses as `name local@domain`, parsed: `<user (comment)@ (comment) host>` is found by
 * `user@host`, as Dovecot finds it (the field's text is searched too).
 */
function addressText(value: string): string {
  return parseAddressList(value)
    .map((a) => (a.kind === 'mailbox' ? `${a.name ?? ''} ${a.mailbox}${a.host === null ? '' : `@${a.host}`}` : a.kind === 'group-start' ? a.name : ''))
    .join('\n');
}

function matches(key: SearchKey, c: Candidate, maxSeq: number, maxUid: number, recent: ReadonlySet<number>): boolean {
  switch (key.op) {
    case 'all':
      return true;
    case 'and':
      return key.keys.every((k) => matches(k, c, maxSeq, maxUid, recent));
    case 'or':
      return matches(key.a, c, maxSeq, maxUid, recent) || matches(key.b, c, maxSeq, maxUid, recent);
    case 'not':
      return !matches(key.key, c, maxSeq, maxUid, recent);
    case 'flag':
      return c.meta.flags.some((f) => f.toLowerCase() === key.flag.toLowerCase()) === key.present;
    case 'recent':
      return recent.has(c.meta.uid);
    case 'new':
      return recent.has(c.meta.uid) && !c.meta.flags.some((f) => f.toLowerCase() === '\\seen');
    case 'old':
      return !recent.has(c.meta.uid);
    case 'seq':
      return inSet(key.set, c.seq, maxSeq);
    case 'uid':
      return inSet(key.set, c.meta.uid, maxUid);
    case 'larger':
      return c.meta.size > key.size;
    case 'smaller':
      return c.meta.size < key.size;
    case 'internaldate':
      return c.meta.internalDate ? compareDay(internalDay(c.meta.internalDate, c.meta.internalDateZone), key.cmp, key.day) : false;
    case 'modseq':
      return c.meta.modseq >= key.modseq;
    case 'emailid':
      return emailId(c.meta.blobId) === key.id;
    case 'threadid':
      return false; // THREADID is NIL: no thread (RFC 8474 §5.2)
    case 'savedate': {
      const at = c.meta.savedDate ?? c.meta.internalDate;
      return at ? compareDay(internalDay(at, 0), key.cmp, key.day) : false;
    }
    case 'savedatesupported':
      return true; // every folder keeps save dates (RFC 8514 §4.3)
    case 'sentdate':
      return c.tree ? compareDay(sentDay(header(c.tree, 'date')), key.cmp, key.day) : false;
    case 'header': {
      if (!c.tree) return false;
      const fields = c.tree.headers.filter((h) => h.key === key.field);
      if (key.value === '') return fields.length > 0;
      return fields.some(
        (h) =>
          contains(decodeHeaderValue(h.value), key.value) ||
          contains(h.value, key.value) ||
          (ADDRESS_FIELDS.has(key.field) && contains(decodeHeaderValue(addressText(h.value)), key.value)),
      );
    }
    case 'body':
      return c.tree && c.raw ? contains(bodyText(c.raw, c.tree), key.value) : false;
    case 'text':
      return c.tree && c.raw
        ? contains(headerText(c.tree), key.value) || contains(partHeaderText(c.tree), key.value) || contains(bodyText(c.raw, c.tree), key.value)
        : false;
  }
}

export const SEARCH: CommandSpec<'SEARCH'> = {
  states: SELECTED,
  updates: 'no-expunge',
  async handle(s, cmd) {
    if (cmd.charset && cmd.charset !== 'UTF-8' && cmd.charset !== 'US-ASCII') return no('Unsupported charset', 'BADCHARSET (UTF-8 US-ASCII)');
    await s.sync(false);
    const view = s.selected!;
    const withModseq = usesModseq(cmd.key);
    if (withModseq) s.condstore = true;
    const content = needsContent(cmd.key);
    const maxSeq = view.count;
    const maxUid = view.lastUid;
    const hits: number[] = [];
    let highest = 0;
    // Metadata per batch from the store (one range scan each); contents one message at a time.
    for (let b = 0; b < view.count && s.state !== 'logout' && s.selected === view; b += FETCH_BATCH) {
      const end = Math.min(view.count, b + FETCH_BATCH);
      const batch: number[] = [];
      for (let i = b; i < end; i++) batch.push(view.uid(i));
      const rows = await readRows(s, batch, needsInternalDate(cmd.key) ? 'meta' : 'state');
      for (let i = b; i < end; i++) {
        const meta = rows.get(batch[i - b]!);
        if (!meta) continue; // expunged meanwhile
        const c: Candidate = { meta, seq: i + 1, raw: null, tree: null };
        if (content) {
          c.raw = await s.store.readMessage(view.folderId, meta.uid);
          if (c.raw) c.tree = parseMessage(c.raw);
        }
        if (matches(cmd.key, c, maxSeq, maxUid, view.recent)) {
          hits.push(cmd.uid ? meta.uid : i + 1);
          if (meta.modseq > highest) highest = meta.modseq;
        }
      }
    }
    let line = hits.length ? `SEARCH ${hits.join(' ')}` : 'SEARCH';
    if (withModseq && hits.length) line += ` (MODSEQ ${highest})`;
    await s.untagged(line);
    return ok(`${cmd.uid ? 'UID ' : ''}SEARCH completed`);
  },
};
