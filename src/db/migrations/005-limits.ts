// Sending quotas and safety caps: monthly counts per team, the external-recipient cap state and holds,
// and platform-wide operator switches.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // One row per team and calendar month (UTC): accepted live messages. Overage is derived at read time.
  await knex.schema.createTable('team_usage', (t) => {
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('month').notNullable(); // YYYY-MM
    t.integer('sent').notNullable().defaultTo(0);
    t.primary(['team_id', 'month']);
  });

  // External-recipient cap state and the safety hold, one row per team that has sent.
  await knex.schema.createTable('team_send_state', (t) => {
    t.string('team_id').primary().references('teams.id').onDelete('CASCADE');
    t.integer('first_hour_count').notNullable().defaultTo(0); // external sends in the account's first hour
    t.bigInteger('window_start'); // epoch ms: the fixed 24-hour window began at its first counted send
    t.integer('window_count').notNullable().defaultTo(0);
    t.integer('window_peak').notNullable().defaultTo(0); // busiest completed window: the account's history
    t.string('held_at'); // set: sending is on hold for safety review until an operator releases it
    t.text('hold_reason');
    t.string('reviewed_at'); // an operator released a hold: a later cap breach answers 429 instead of holding
    t.boolean('established').notNullable().defaultTo(false); // the operator's own account: no new-account rules
  });

  await knex.schema.createTable('platform_settings', (t) => {
    t.string('key').primary();
    t.text('value').notNullable();
    t.string('updated_at').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['platform_settings', 'team_send_state', 'team_usage']) await knex.schema.dropTableIfExists(table);
}
