// Emails found by a Message-ID the box did not make (SMTP submission keeps the client's): a complaint report
// names the original only by it. Partial: the box's own `<em_…@host>` ids are found by their public id, and
// the send path's inserts of those pay nothing for this index.
import type { Knex } from 'knex';

/** The index's condition; a query must repeat it word for word for SQLite to use the index. */
export const FOREIGN_MESSAGE_ID = "message_id NOT LIKE '<em\\_%' ESCAPE '\\'";

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX emails_foreign_message_id ON emails (message_id) WHERE ${FOREIGN_MESSAGE_ID}`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX emails_foreign_message_id');
}
