// SMTP submission: a raw send keeps the finished message it was given (Bcc removed), which delivery DKIM-signs
// instead of composing. In a table of its own beside `emails`, so that reads of email rows (lists, the
// delivery batch) never carry message bodies; deleted with its email.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('email_sources', (t) => {
    t.integer('email_id').primary().references('emails.id').onDelete('CASCADE');
    t.binary('raw').notNullable(); // RFC 5322 source, CRLF line ends
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('email_sources');
}
