// The full-text index written off the delivery path (src/mailstore/text-index.ts): a source stored is marked
// "not indexed yet" here, in the transaction that stores it, and the index job indexes such sources in
// batches. SEARCH BODY/TEXT scan a folder's messages without an index row themselves meanwhile. The mark goes
// with its source (the blob's delete trigger), like the index row. Sources stored before are indexed already
// (migration 028): nothing to mark.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE TABLE mail_fts_pending (sha256 TEXT PRIMARY KEY) WITHOUT ROWID');
  await knex.raw('DROP TRIGGER mail_blobs_fts');
  await knex.raw(`CREATE TRIGGER mail_blobs_fts AFTER DELETE ON mail_blobs BEGIN
    DELETE FROM mail_fts WHERE rowid = (SELECT id FROM mail_fts_docs WHERE sha256 = OLD.sha256);
    DELETE FROM mail_fts_docs WHERE sha256 = OLD.sha256;
    DELETE FROM mail_fts_pending WHERE sha256 = OLD.sha256;
  END`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER mail_blobs_fts');
  await knex.raw(`CREATE TRIGGER mail_blobs_fts AFTER DELETE ON mail_blobs BEGIN
    DELETE FROM mail_fts WHERE rowid = (SELECT id FROM mail_fts_docs WHERE sha256 = OLD.sha256);
    DELETE FROM mail_fts_docs WHERE sha256 = OLD.sha256;
  END`);
  await knex.raw('DROP TABLE IF EXISTS mail_fts_pending');
}
