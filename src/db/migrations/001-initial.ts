// Teams, API keys, sending domains with their DKIM keys, and the durable events table.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('teams', (t) => {
    t.string('id').primary();
    t.string('name').notNullable();
    t.string('plan').notNullable();
    t.string('owner_email').notNullable();
    t.string('created_at').notNullable();
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.string('id').primary();
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('name').notNullable();
    t.string('permission').notNullable(); // full_access | sending_access
    t.string('mode').notNullable(); // live | test
    t.string('token_hash').notNullable().unique(); // sha256 hex; the plaintext is never stored
    t.string('token_hint').notNullable(); // last four characters, to tell keys apart
    t.string('created_at').notNullable();
    t.string('rotated_at');
    t.string('last_used_at');
    t.index(['team_id', 'created_at']);
  });

  await knex.schema.createTable('domains', (t) => {
    t.string('id').primary();
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('name').notNullable().unique(); // one owner per domain on the box: inbound routing needs it
    t.string('status').notNullable(); // pending | verified | failed
    t.string('region').notNullable();
    t.boolean('open_tracking').notNullable().defaultTo(false);
    t.boolean('click_tracking').notNullable().defaultTo(false);
    t.string('tls_mode').notNullable(); // opportunistic | enforced
    t.text('record_status').notNullable().defaultTo('{}'); // JSON: record key -> { status, reason, checked_at }
    t.string('verified_at');
    t.string('last_checked_at');
    t.string('created_at').notNullable();
    t.string('updated_at').notNullable();
    t.index(['team_id', 'created_at']);
  });

  await knex.schema.createTable('dkim_keys', (t) => {
    t.string('id').primary();
    t.string('domain_id').notNullable().references('domains.id').onDelete('CASCADE');
    t.string('selector').notNullable();
    t.text('public_key').notNullable(); // base64 SubjectPublicKeyInfo, as published in p=
    t.text('private_key_sealed').notNullable(); // PKCS#8 PEM sealed with the box's master key
    t.string('state').notNullable(); // active (signs) | pending (rotation) | retiring
    t.string('created_at').notNullable();
    t.string('retire_after');
    t.unique(['domain_id', 'selector']);
  });

  // Every change worth telling a customer about, written in the same transaction as the change.
  // The webhook dispatcher reads from here.
  await knex.schema.createTable('events', (t) => {
    t.increments('id').primary();
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('type').notNullable();
    t.text('data').notNullable();
    t.string('created_at').notNullable();
    t.index(['team_id', 'id']);
    t.index(['team_id', 'type', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['events', 'dkim_keys', 'domains', 'api_keys', 'teams']) await knex.schema.dropTableIfExists(table);
}
