// IMAP's \Recent (RFC 3501 §2.3.2): each folder keeps the first UID no session has seen yet. The first session
// to select the folder read-write (or to learn of a new message while it has the folder selected) moves the mark
// past what it saw, in one transaction, so two sessions never both see a message as recent. Existing folders
// start with nothing recent.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('mail_folders', (t) => {
    t.integer('recent_uid').notNullable().defaultTo(0);
  });
  await knex('mail_folders').update({ recent_uid: knex.ref('uid_next') });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('mail_folders', (t) => {
    t.dropColumn('recent_uid');
  });
}
