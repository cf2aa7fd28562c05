// tag [UID] SORT (criteria) charset keys and tag [UID] THREAD alg charset keys (RFC 5256 §3, §4; RFC 5957;
// MODSEQ per RFC 7162 §3.1.5). The messages are chosen as SEARCH chooses them; what they are ordered and
// linked by is the store's SortKeys, read for the chosen messages in one range scan (no source is parsed).
import { sortKeysOf } from '../../mailstore/sort-keys.js';
import type { SortRow } from '../../mailstore/types.js';
import type { SearchKey } from '../protocol/search.js';
import { usesModseq } from '../protocol/search.js';
import { formatThread } from '../protocol/sort.js';
import type { Session } from '../session.js';
import { orderedSubject, referencesThreads, sortItems, type SortItem } from '../sort-thread.js';
import { searchMessages } from './search.js';
import { no, ok, SELECTED, type CommandSpec, type Result } from './types.js';

const CHARSETS = new Set(['UTF-8', 'US-ASCII']);

/** The chosen messages with their keys, in sequence order, and the highest MODSEQ among them. */
async function chosen(s: Session, key: SearchKey, uid: boolean): Promise<{ items: SortItem[]; highest: number }> {
  const hits = await searchMessages(s, key);
  const items: SortItem[] = [];
  let highest = 0;
  if (hits.length === 0) return { items, highest };
  const view = s.selected!;
  const first = hits[0]!.uid;
  const last = hits[hits.length - 1]!.uid;
  // One range scan when the hits are dense in the folder, else the list.
  const rows = await s.store.listSortKeys(view.folderId, last - first + 1 <= hits.length * 2 ? { uidRange: [first, last] } : { uids: hits.map((h) => h.uid) });
  const byUid = new Map<number, SortRow>();
  for (const r of rows) byUid.set(r.uid, r);
  for (const h of hits) {
    const row = byUid.get(h.uid);
    if (!row) continue; // expunged meanwhile
    // A row stored without keys (none after migration 029): from its source, this once.
    let keys = row.keys;
    if (!keys) {
      const raw = await s.store.readMessage(view.folderId, h.uid);
      if (!raw) continue;
      keys = sortKeysOf(raw);
    }
    items.push({ seq: h.seq, id: uid ? h.uid : h.seq, arrival: row.arrival, size: row.size, keys });
    if (h.modseq > highest) highest = h.modseq;
  }
  return { items, highest };
}

function badCharset(charset: string): Result | null {
  return CHARSETS.has(charset) ? null : no(`Unsupported charset ${charset}`, 'BADCHARSET (UTF-8 US-ASCII)');
}

export const SORT: CommandSpec<'SORT'> = {
  states: SELECTED,
  updates: 'no-expunge',
  async handle(s, cmd) {
    const refused = badCharset(cmd.charset);
    if (refused) return refused;
    await s.sync(false);
    const withModseq = usesModseq(cmd.key);
    if (withModseq) s.condstore = true;
    const { items, highest } = await chosen(s, cmd.key, cmd.uid);
    const ids = sortItems(items, cmd.criteria).map((m) => m.id);
    let line = ids.length ? `SORT ${ids.join(' ')}` : 'SORT';
    if (withModseq && ids.length) line += ` (MODSEQ ${highest})`;
    await s.untagged(line);
    return ok(`${cmd.uid ? 'UID ' : ''}SORT completed`);
  },
};

export const THREAD: CommandSpec<'THREAD'> = {
  states: SELECTED,
  updates: 'no-expunge',
  async handle(s, cmd) {
    const refused = badCharset(cmd.charset);
    if (refused) return refused;
    await s.sync(false);
    if (usesModseq(cmd.key)) s.condstore = true;
    const { items } = await chosen(s, cmd.key, cmd.uid);
    const threads = cmd.algorithm === 'REFERENCES' ? referencesThreads(items) : orderedSubject(items);
    await s.untagged(threads.length ? `THREAD ${threads.map(formatThread).join('')}` : 'THREAD');
    return ok(`${cmd.uid ? 'UID ' : ''}THREAD completed`);
  },
};
