// An email's bodies (html, text) in a table of their own, written once when the email is accepted. In the
// emails row they made every status change — 'sending', then the outcome, each an UPDATE of a small column —
// rewrite the whole record with its ~5 KB of bodies: its overflow pages freed, allocated and written again,
// each into the WAL, the statement journal and later the checkpoint. On bench:send's batch phase SQLite's
// pwrite and pread calls per delivered email went from 25 + 14.5 to 17 + 5.5. Keyed by the email's id (the
// rowid: no index of its own), deleted with the email.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE TABLE email_bodies (email_id INTEGER PRIMARY KEY REFERENCES emails (id) ON DELETE CASCADE, html TEXT, text TEXT)');
  await knex.raw('INSERT INTO email_bodies (email_id, html, text) SELECT id, html, text FROM emails WHERE html IS NOT NULL OR text IS NOT NULL');
  await knex.raw('ALTER TABLE emails DROP COLUMN html');
  await knex.raw('ALTER TABLE emails DROP COLUMN text');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE emails ADD COLUMN html TEXT');
  await knex.raw('ALTER TABLE emails ADD COLUMN text TEXT');
  await knex.raw('UPDATE emails SET (html, text) = (SELECT b.html, b.text FROM email_bodies AS b WHERE b.email_id = emails.id)');
  await knex.raw('DROP TABLE email_bodies');
}
