// The one durable job table: everything that waits (scheduled sends, delivery and webhook retries,
// A/B winners, workflow delays, DKIM retirement) is a row here, so a crash loses nothing.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('jobs', (t) => {
    t.increments('id').primary();
    t.string('kind').notNullable();
    t.text('payload').notNullable(); // JSON
    t.bigInteger('run_at').notNullable(); // epoch ms: due from then on
    t.integer('attempts').notNullable().defaultTo(0); // runs started so far
    t.bigInteger('lease_until'); // epoch ms: a worker holds it until then; expired leases are taken again
    t.string('state').notNullable().defaultTo('ready'); // ready | dead
    t.text('last_error');
    t.string('dedupe_key').unique(); // optional: one live job per key
    t.bigInteger('created_at').notNullable();
    t.index(['state', 'run_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('jobs');
}
