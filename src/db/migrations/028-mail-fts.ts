// The full-text index of the mail store (src/mailstore/search-text.ts): IMAP SEARCH BODY/TEXT are
// case-insensitive substring matches (RFC 3501 §6.4.4), so the tokenizer is FTS5's trigram (a needle of
// three characters or more is the phrase of its trigrams; a shorter one is looked for in the stored text),
// case-sensitive over text the store lower-cased itself. One row per source, numbered by `mail_fts_docs` (the
// source's hash → the index's rowid; not mail_blobs' own rowid, which VACUUM may renumber): copies share it,
// and it goes with the source, by trigger, in the transaction that drops the source's last message (expunge,
// move, folder delete, account purge, the cascades of a domain or team).
// No column sizes (columnsize = 0: nothing ranks the matches, and each insert writes one row less).
// Existing sources are indexed here, a batch of sources at a time (never the whole store in memory).
import type { Knex } from 'knex';
import { indexSources, searchTextOf } from '../../mailstore/search-text.js';

const BATCH = 200;

export async function up(knex: Knex): Promise<void> {
  await knex.raw("CREATE VIRTUAL TABLE mail_fts USING fts5(head, parts, body, tokenize = 'trigram case_sensitive 1', columnsize = 0)");
  await knex.raw('CREATE TABLE mail_fts_docs (id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE)');
  await knex.raw(`CREATE TRIGGER mail_blobs_fts AFTER DELETE ON mail_blobs BEGIN
    DELETE FROM mail_fts WHERE rowid = (SELECT id FROM mail_fts_docs WHERE sha256 = OLD.sha256);
    DELETE FROM mail_fts_docs WHERE sha256 = OLD.sha256;
  END`);
  for (let after = 0; ; ) {
    const rows = (await knex.raw('SELECT rowid AS id, sha256, raw FROM mail_blobs WHERE rowid > ? ORDER BY rowid LIMIT ?', [after, BATCH])) as Array<{ id: number; sha256: string; raw: Buffer }>;
    if (rows.length === 0) break;
    await indexSources(knex, rows.map((r) => ({ sha256: r.sha256, text: searchTextOf(r.raw) })));
    after = rows[rows.length - 1]!.id;
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS mail_blobs_fts');
  await knex.raw('DROP TABLE IF EXISTS mail_fts');
  await knex.raw('DROP TABLE IF EXISTS mail_fts_docs');
}
