// IMAP QRESYNC (RFC 7162 §3.2), OBJECTID (RFC 8474) and SAVEDATE (RFC 8514):
// - `mail_vanished`: tombstones of expunged messages, per folder: UID ranges with the MODSEQ of their expunge
//   (a range may span UIDs that were already gone: VANISHED (EARLIER) may name UIDs a client never knew). The
//   oldest of a folder are pruned past MAIL_VANISHED_PER_FOLDER rows (mailstore/vanished.ts), raising the
//   folder's `vanished_modseq`: a client whose MODSEQ is below it is told every UID it may know that is gone.
//   Expunges still in the change feed are copied in; older ones are covered by `vanished_modseq` (the
//   mailbox's `changes_pruned_modseq`).
// - MAILBOXID values are `F` and 24 random hex digits (mailstore/rows.ts newObjectId).
// - `mail_folders.object_id`: the MAILBOXID, random, kept across RENAME (a new one for a folder created again).
// - `mail_messages.saved_ms`: when the message was saved into its folder (delivery, APPEND, COPY, MOVE); NULL
//   for messages stored before this migration (SAVEDATE then answers the internal date).
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE mail_vanished (
    folder_id INTEGER NOT NULL REFERENCES mail_folders(id) ON DELETE CASCADE,
    modseq INTEGER NOT NULL,
    first_uid INTEGER NOT NULL,
    last_uid INTEGER NOT NULL
  )`);
  await knex.raw('CREATE INDEX mail_vanished_folder ON mail_vanished (folder_id, modseq)');
  await knex.raw('ALTER TABLE mail_folders ADD COLUMN vanished_modseq INTEGER NOT NULL DEFAULT 0');
  await knex.raw('ALTER TABLE mail_folders ADD COLUMN object_id TEXT');
  await knex.raw('ALTER TABLE mail_messages ADD COLUMN saved_ms INTEGER');
  await knex.raw(`INSERT INTO mail_vanished (folder_id, modseq, first_uid, last_uid)
    SELECT c.folder_id, c.modseq, c.uid, c.uid FROM mail_changes c JOIN mail_folders f ON f.id = c.folder_id WHERE c.kind = 'expunge'`);
  await knex.raw('UPDATE mail_folders SET vanished_modseq = (SELECT changes_pruned_modseq FROM mailboxes m WHERE m.id = mail_folders.mailbox_id)');
  const folders = (await knex('mail_folders').select('id')) as Array<{ id: number }>;
  for (const f of folders) await knex('mail_folders').where({ id: f.id }).update({ object_id: 'F' + randomBytes(12).toString('hex') });
  await knex.raw('CREATE UNIQUE INDEX mail_folders_object_id ON mail_folders (object_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS mail_folders_object_id');
  await knex.raw('DROP TABLE IF EXISTS mail_vanished');
  await knex.raw('ALTER TABLE mail_folders DROP COLUMN vanished_modseq');
  await knex.raw('ALTER TABLE mail_folders DROP COLUMN object_id');
  await knex.raw('ALTER TABLE mail_messages DROP COLUMN saved_ms');
}
