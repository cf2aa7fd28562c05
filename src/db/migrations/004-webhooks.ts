// Webhook endpoints, their deliveries, the dispatcher's cursor over the events table, and alerts.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhooks', (t) => {
    t.increments('id').primary();
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.text('url').notNullable();
    t.text('events').notNullable(); // JSON array of subscribed event kinds
    t.boolean('active').notNullable().defaultTo(true);
    t.text('secret_sealed').notNullable(); // signing secret, sealed with the box's master key (it must be usable later)
    t.text('previous_secret_sealed'); // the secret before a rotation, during its grace window
    t.string('previous_secret_expires_at');
    t.integer('consecutive_failures').notNullable().defaultTo(0);
    // Events with a larger id are delivered: set at creation and at every (re-)enable, so events that
    // occurred before the endpoint existed or while it was disabled never reach it.
    t.integer('from_event_id').notNullable().defaultTo(0);
    t.string('disabled_at');
    t.string('created_at').notNullable();
    t.string('updated_at').notNullable();
    t.index(['team_id', 'id']);
  });

  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.increments('id').primary();
    t.integer('webhook_id').notNullable().references('webhooks.id').onDelete('CASCADE');
    t.integer('event_id'); // null for test events
    t.string('event_type').notNullable();
    t.text('payload').notNullable(); // the exact body bytes sent (and re-sent by a replay)
    t.string('status').notNullable(); // pending | delivered | rejected (406) | failed
    t.integer('status_code');
    t.text('response_body');
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('next_retry_at');
    t.string('delivered_at');
    t.string('created_at').notNullable();
    t.index(['webhook_id', 'id']);
    t.index(['webhook_id', 'status', 'id']);
  });

  // One row: the id of the last event the dispatcher has fanned out.
  await knex.schema.createTable('webhook_dispatch', (t) => {
    t.string('name').primary();
    t.integer('position').notNullable();
  });
  const [{ last }] = (await knex('events').max({ last: 'id' })) as [{ last: number | null }];
  await knex('webhook_dispatch').insert({ name: 'events', position: last ?? 0 });

  // Things an operator or a team should be told about (webhook auto-disabled, …); notification channels
  // list them later.
  await knex.schema.createTable('alerts', (t) => {
    t.increments('id').primary();
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('kind').notNullable();
    t.text('message').notNullable();
    t.text('data').notNullable(); // JSON
    t.string('created_at').notNullable();
    t.index(['team_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['alerts', 'webhook_dispatch', 'webhook_deliveries', 'webhooks']) await knex.schema.dropTableIfExists(table);
}
