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
import { sortRowsOf } from '../sort-cache.js';
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
  // The rows sorted before are kept (sort-cache.ts); the others are read, in one range scan when they are
  // dense in the folder, else by list.
  const cache = sortRowsOf(s.deps);
  const kept = cache.rows(view.folderId);
  const missing = hits.filter((h) => !kept.has(h.uid)).map((h) => h.uid);
  const byUid = new Map<number, SortRow>();
  if (missing.length) {
    const first = missing[0]!;
    const last = missing[missing.length - 1]!;
    const rows = await s.store.listSortKeys(view.folderId, last - first + 1 <= missing.length * 2 ? { uidRange: [first, last] } : { uids: missing });
    for (const r of rows) {
      // A row stored without keys (none after migration 029): from its source, this once.
      if (!r.keys) {
        const raw = await s.store.readMessage(view.folderId, r.uid);
        if (!raw) continue;
        r.keys = sortKeysOf(raw);
      }
      byUid.set(r.uid, r);
    }
    cache.add(view.folderId, [...byUid.values()]);
    cache.prune(view.folderId, view.count, (uid) => view.seqOf(uid) > 0);
  }
  for (const h of hits) {
    const row = byUid.get(h.uid) ?? kept.get(h.uid);
    if (!row?.keys) continue; // expunged meanwhile
    const keys = row.keys;
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
