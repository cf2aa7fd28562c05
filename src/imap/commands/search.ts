// tag [UID] SEARCH [CHARSET c] keys (RFC 3501 §6.4.4; MODSEQ per RFC 7162 §3.1.5). Metadata keys are
// answered from the store's rows, read per batch; header/body keys read each candidate's source once.
import type { MessageState } from '../../mailstore/types.js';
import { parseAddressList } from '../mime/addresses.js';
import { header, parseMessage, type MimeNode } from '../mime/parse.js';
import { bodyText, decodeHeaderValue, headerText, partHeaderText } from '../mime/text.js';
import { esearchLine, savedUids, withSavedResult, type Hit } from '../protocol/esearch.js';
import { FETCH_BATCH } from '../protocol/limits.js';
import { needsContent, needsInternalDate, usesModseq, usesRecent, usesThreadId, type SearchKey } from '../protocol/search.js';
import { inSet } from '../protocol/sequence.js';
import { emailId, readRows, threadIdsOf } from './fetch.js';
import type { Session } from '../session.js';
import { needsSource, textHits, type TextHits } from './search-text.js';
import { bad, no, ok, SELECTED, type CommandSpec } from './types.js';

interface Candidate {
  meta: MessageState & { internalDate?: Date; internalDateZone?: number; savedDate?: Date };
  seq: number;
  raw: Buffer | null;
  tree: MimeNode | null;
  /** BODY/TEXT answered by the full-text index (search-text.ts); without it, the source is scanned. */
  hits?: TextHits;
  /** THREADIDs of the batch (RFC 8474), read when a THREADID key is asked. */
  threadIds?: Map<number, string> | null;
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
      return c.threadIds?.get(c.meta.uid) === key.id;
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
      if (c.hits) return c.hits.get(key)!.has(c.meta.uid);
      return c.tree && c.raw ? contains(bodyText(c.raw, c.tree), key.value) : false;
    case 'text':
      if (c.hits) return c.hits.get(key)!.has(c.meta.uid);
      return c.tree && c.raw
        ? contains(headerText(c.tree), key.value) || contains(partHeaderText(c.tree), key.value) || contains(bodyText(c.raw, c.tree), key.value)
        : false;
  }
}

/** A message the criteria matched. */
export interface SearchHit {
  seq: number;
  uid: number;
  modseq: number;
}

/**
 * The messages of the selected folder the key matches, in sequence order (SEARCH; SORT and THREAD select
 * with it too; `$` in them is the saved result). `ALL` alone reads nothing.
 */
export async function searchMessages(s: Session, criteria: SearchKey): Promise<SearchHit[]> {
  const view = s.selected!;
  // `$` (RFC 5182) stands for the UIDs the last SEARCH (SAVE) kept.
  const key = withSavedResult(criteria, view.saved);
  const hits: SearchHit[] = [];
  if (key.op === 'all') {
    // Those expunged meanwhile (not yet announced) are left out, as the rows read below would leave them.
    for (let i = 0; i < view.count; i++) {
      const uid = view.uid(i);
      if (!view.pendingExpunge.has(uid)) hits.push({ seq: i + 1, uid, modseq: view.modseqAt(i) });
    }
    return hits;
  }
  const content = needsSource(key);
  const indexed = needsContent(key) ? await textHits(s.store, view.folderId, key) : undefined;
  const maxSeq = view.count;
  const maxUid = view.lastUid;
  const byThread = usesThreadId(key);
  // Metadata per batch from the store (one range scan each); contents one message at a time.
  for (let b = 0; b < view.count && s.state !== 'logout' && s.selected === view; b += FETCH_BATCH) {
    const end = Math.min(view.count, b + FETCH_BATCH);
    const batch: number[] = [];
    for (let i = b; i < end; i++) batch.push(view.uid(i));
    const rows = await readRows(s, batch, needsInternalDate(key) ? 'meta' : 'state');
    const threadIds = byThread ? await threadIdsOf(s, view.folderId, rows) : null;
    for (let i = b; i < end; i++) {
      const meta = rows.get(batch[i - b]!);
      if (!meta) continue; // expunged meanwhile
      const c: Candidate = { meta, seq: i + 1, raw: null, tree: null, hits: indexed, threadIds };
      if (content) {
        c.raw = await s.store.readMessage(view.folderId, meta.uid);
        if (c.raw) c.tree = parseMessage(c.raw);
      }
      if (matches(key, c, maxSeq, maxUid, view.recent)) hits.push({ seq: i + 1, uid: meta.uid, modseq: meta.modseq });
    }
  }
  return hits;
}

export const SEARCH: CommandSpec<'SEARCH'> = {
  states: SELECTED,
  updates: 'no-expunge',
  async handle(s, cmd) {
    const saving = cmd.ret?.includes('SAVE') === true;
    // RFC 9051 has no \Recent: RECENT, NEW and OLD are not in its grammar (the SEARCH is BAD: `$` stays as it was).
    if (s.imap4rev2 && usesRecent(cmd.key)) return bad('RECENT, NEW and OLD are not IMAP4rev2 search keys');
    if (cmd.charset && cmd.charset !== 'UTF-8' && cmd.charset !== 'US-ASCII') {
      // RFC 5182 §2.1: a SEARCH (SAVE) answered NO leaves `$` empty.
      if (saving) s.selected!.saved.clear();
      return no('Unsupported charset', 'BADCHARSET (UTF-8 US-ASCII)');
    }
    await s.sync(false);
    const view = s.selected!;
    const withModseq = usesModseq(cmd.key);
    if (withModseq) s.condstore = true;
    const hits: Hit[] = (await searchMessages(s, cmd.key)).map((h) => ({ n: cmd.uid ? h.uid : h.seq, uid: h.uid, modseq: h.modseq }));
    if (saving && s.selected === view) {
      view.saved.clear();
      for (const uid of savedUids(cmd.ret!, hits)) view.saved.add(uid);
    }
    if (cmd.ret || s.imap4rev2) {
      // ESEARCH (RFC 4731); IMAP4rev2 answers every SEARCH so, no RETURN meaning RETURN (ALL) (RFC 9051 §6.4.4).
      const line = esearchLine(cmd.tag, cmd.uid, cmd.ret ?? ['ALL'], hits, withModseq);
      if (line) await s.untagged(line);
    } else {
      let line = hits.length ? `SEARCH ${hits.map((h) => h.n).join(' ')}` : 'SEARCH';
      if (withModseq && hits.length) line += ` (MODSEQ ${hits.reduce((m, h) => Math.max(m, h.modseq), 0)})`;
      await s.untagged(line);
    }
    return ok(`${cmd.uid ? 'UID ' : ''}SEARCH completed`);
  },
};
