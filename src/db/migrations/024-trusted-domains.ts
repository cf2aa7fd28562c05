// Trusted domains (issue 37 §1): a domain the operator declares theirs (MAIL_LOCAL_DOMAINS or `admin domains add
// --trusted`), verified by the operator rather than by DNS. Its records are still checked and shown; its status
// stays verified whatever they say.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('domains', (t) => {
    t.boolean('trusted').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('domains', (t) => {
    t.dropColumn('trusted');
  });
}
