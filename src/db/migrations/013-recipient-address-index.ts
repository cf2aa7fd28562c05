// email_recipients' index on the address served no query (the `to` filter of GET /emails is a
// case-insensitive substring match, which no index serves; everything else finds recipients by email_id), and
// every recipient accepted wrote a leaf page of it at a place its address chose (into the WAL, then again at
// the checkpoint).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS email_recipients_address_index');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX email_recipients_address_index ON email_recipients (address)');
}
