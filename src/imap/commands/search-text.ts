// SEARCH BODY and TEXT through the store's full-text index (src/mailstore/search-text.ts): each such key of the
// tree is answered once, for the whole folder, as a set of UIDs; the messages' sources are read only for the
// header keys (HEADER, FROM, SUBJECT, SENTON, …).
import type { MailStore } from '../../mailstore/types.js';
import type { SearchKey } from '../protocol/search.js';

/** The UIDs each BODY/TEXT key of the tree finds in the folder. */
export type TextHits = Map<SearchKey, ReadonlySet<number>>;

function textKeys(key: SearchKey, out: Array<Extract<SearchKey, { op: 'body' | 'text' }>>): typeof out {
  if (key.op === 'and') for (const k of key.keys) textKeys(k, out);
  else if (key.op === 'or') textKeys(key.a, out), textKeys(key.b, out);
  else if (key.op === 'not') textKeys(key.key, out);
  else if (key.op === 'body' || key.op === 'text') out.push(key);
  return out;
}

export async function textHits(store: MailStore, folderId: number, key: SearchKey): Promise<TextHits> {
  const hits: TextHits = new Map();
  for (const k of textKeys(key, [])) hits.set(k, new Set(await store.searchText(folderId, k.op, k.value)));
  return hits;
}

/** True when some key needs the messages' sources: a header or sent-date key (BODY and TEXT have the index). */
export function needsSource(key: SearchKey): boolean {
  switch (key.op) {
    case 'and':
      return key.keys.some(needsSource);
    case 'or':
      return needsSource(key.a) || needsSource(key.b);
    case 'not':
      return needsSource(key.key);
    default:
      return key.op === 'header' || key.op === 'sentdate';
  }
}
