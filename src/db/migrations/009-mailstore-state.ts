// The mail store, second step: what an IMAP session reads without the message rows, and a change feed that
// can be pruned.
// - `mail_messages_state` (folder_id, uid, modseq, flags, size, blob_id): a covering index, so SELECT's
//   UID/MODSEQ list, the first unseen message, the keywords in use, the folder counts and IMAP's per-command
//   reads (FETCH FLAGS, SEARCH UNSEEN LARGER n, and the content addresses that key the ENVELOPE cache) read
//   ~90 bytes a message instead of the whole row (whose header summary makes it ~0.7 KB).
// - `mail_changes.created_ms`: when the change was written (ms since the epoch, the store's clock; NULL for
//   rows written before this migration), so retention can drop changes older than the feed's window.
// - `mailboxes.changes_pruned_modseq`: the highest MODSEQ whose changes may have been pruned; a reader whose
//   cursor is below it cannot rely on the feed and resynchronises from the messages themselves.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX mail_messages_state ON mail_messages (folder_id, uid, modseq, flags, size, blob_id)');
  await knex.raw('ALTER TABLE mail_changes ADD COLUMN created_ms INTEGER');
  await knex.raw('ALTER TABLE mailboxes ADD COLUMN changes_pruned_modseq INTEGER NOT NULL DEFAULT 0');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS mail_messages_state');
  await knex.raw('ALTER TABLE mail_changes DROP COLUMN created_ms');
  await knex.raw('ALTER TABLE mailboxes DROP COLUMN changes_pruned_modseq');
}
