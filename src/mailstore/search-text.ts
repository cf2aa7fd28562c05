// What IMAP SEARCH BODY and TEXT look in (RFC 3501 §6.4.4: a case-insensitive substring of the decoded text),
// computed once per source by the index job shortly after it is stored (text-index.ts; until then SEARCH computes
// it for the unindexed messages itself) and kept in the full-text index `mail_fts` (migration 028), one row per
// source (`mail_fts_docs` maps the source's hash to its row): every copy of a message shares its source's row. Three columns, so a
// match never spans two of them (the scan SEARCH did before compared each of them on its own):
// - head: the message's header fields, decoded (TEXT)
// - parts: the body parts' MIME headers and their parameters, decoded (TEXT)
// - body: the decoded text/* and message/* parts, embedded messages' headers included (BODY and TEXT)
// Each lower-cased as JavaScript lower-cases (the index's trigram tokenizer is case-sensitive, so the index
// compares exactly what `hay.toLowerCase().includes(needle.toLowerCase())` compares).
// From db/direct.ts, not db/index.ts: migration 028 imports this module, and db/index.ts imports the migrations.
import { execute, placeholders, queryRows, type Queryable } from '../db/direct.js';
import { parseMessage } from './mime/parse.js';
import type { Core } from './rows.js';
import { bodyText, headerText, partHeaderText } from './mime/text.js';

export interface SearchText {
  head: string;
  parts: string;
  body: string;
}

/** The indexed text of a raw source. */
export function searchTextOf(raw: Buffer): SearchText {
  const tree = parseMessage(raw);
  return { head: headerText(tree).toLowerCase(), parts: partHeaderText(tree).toLowerCase(), body: bodyText(raw, tree).toLowerCase() };
}

/** Needles shorter than a trigram are looked for in the indexed text itself (instr), not through the index. */
export const TRIGRAM = 3;

/** An FTS5 string: the needle as one phrase (its trigrams in a row), `"` doubled. */
export function ftsPhrase(needle: string): string {
  return `"${needle.replace(/"/g, '""')}"`;
}

/**
 * Indexes the sources of `items` that are not indexed yet, in `trx`: their `mail_fts_docs` rows in one statement
 * per chunk (RETURNING the rowids given), their index rows in another (every statement a round trip through
 * SQLite's thread: two per chunk, not two per source).
 */
export async function indexSources(trx: Queryable, items: Array<{ sha256: string; text: SearchText }>): Promise<void> {
  for (let i = 0; i < items.length; i += INDEX_CHUNK) {
    const chunk = items.slice(i, i + INDEX_CHUNK);
    const docs = await queryRows<{ id: number; sha256: string }>(
      trx,
      `INSERT INTO mail_fts_docs (sha256) VALUES ${chunk.map(() => '(?)').join(', ')} ON CONFLICT DO NOTHING RETURNING id, sha256`,
      chunk.map((c) => c.sha256),
    );
    if (docs.length === 0) continue;
    const ids = new Map(docs.map((d) => [d.sha256, d.id]));
    const rows = [...new Map(chunk.filter((c) => ids.has(c.sha256)).map((c) => [c.sha256, c])).values()]; // a source named twice: once
    await execute(
      trx,
      `INSERT INTO mail_fts (rowid, head, parts, body) VALUES ${rows.map(() => '(?, ?, ?, ?)').join(', ')}`,
      rows.flatMap((r) => [ids.get(r.sha256), r.text.head, r.text.parts, r.text.body]),
    );
  }
}
/** Sources per indexing statement (4 bound values each, under SQLite's default limit of 32,766). */
const INDEX_CHUNK = 200;

/**
 * The UIDs of a folder's messages whose `where` text contains `needle`, case-insensitively (SEARCH BODY looks in
 * the body column, TEXT in all three). A needle of three characters or more goes through the index (its
 * trigrams as one phrase: an exact substring match); a shorter one is looked for in the stored text. A message
 * whose source is not indexed yet (no `mail_fts_docs` row: text-index.ts indexes new sources in the background)
 * is looked at itself: its source read and its text computed here, so an answer never misses a message.
 */
// The index is matched once (a list SQLite builds, with a Bloom filter) and the folder's messages are tested
// against it: `+d.id` keeps SQLite from turning the IN into a match per message (~1 ms each: 4.6 s for 3,000).
export function createTextSearch(core: Core) {
  return {
    async searchText(folderId: number, where: 'body' | 'text', needle: string): Promise<number[]> {
      const n = needle.toLowerCase();
      const columns = where === 'body' ? (['body'] as const) : (['head', 'parts', 'body'] as const);
      const rows =
        [...n].length >= TRIGRAM
          ? await queryRows<{ uid: number; unindexed: number }>(
              core.reads,
              `SELECT m.uid, d.id IS NULL AS unindexed FROM mail_messages m INDEXED BY mail_messages_state LEFT JOIN mail_fts_docs d ON d.sha256 = m.blob_id
               WHERE m.folder_id = ? AND (d.id IS NULL OR +d.id IN (SELECT rowid FROM mail_fts WHERE mail_fts MATCH ?)) ORDER BY m.uid`,
              [folderId, `{${columns.join(' ')}} : ${ftsPhrase(n)}`],
            )
          : await queryRows<{ uid: number; unindexed: number }>(
              core.reads,
              `SELECT m.uid, d.id IS NULL AS unindexed FROM mail_messages m INDEXED BY mail_messages_state LEFT JOIN mail_fts_docs d ON d.sha256 = m.blob_id
               LEFT JOIN mail_fts f ON f.rowid = d.id
               WHERE m.folder_id = ? AND (d.id IS NULL OR ${columns.map((c) => `instr(f.${c}, ?) > 0`).join(' OR ')}) ORDER BY m.uid`,
              [folderId, ...columns.map(() => n)],
            );
      const unindexed = rows.filter((r) => r.unindexed).map((r) => r.uid);
      if (unindexed.length === 0) return rows.map((r) => r.uid);
      const found = new Set(rows.filter((r) => !r.unindexed).map((r) => r.uid));
      for (let i = 0; i < unindexed.length; i += SCAN_CHUNK) {
        const chunk = unindexed.slice(i, i + SCAN_CHUNK);
        const sources = await queryRows<{ uid: number; raw: Buffer }>(
          core.reads,
          `SELECT m.uid, b.raw FROM mail_messages m JOIN mail_blobs b ON b.sha256 = m.blob_id WHERE m.folder_id = ? AND m.uid IN (${placeholders(chunk.length)})`,
          [folderId, ...chunk],
        );
        for (const { uid, raw } of sources) {
          const text = searchTextOf(raw);
          if (columns.some((c) => text[c].includes(n))) found.add(uid);
        }
      }
      return [...found].sort((a, b) => a - b);
    },
  };
}

/** Unindexed messages read per statement by a search. */
const SCAN_CHUNK = 100;
