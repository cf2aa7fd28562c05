// Emails, their recipients, attachments and timeline, and the team's suppression list.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('emails', (t) => {
    t.increments('id').primary(); // the numeric id of Form A list items
    t.string('public_id').notNullable().unique(); // em_…
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('api_key_id').references('api_keys.id').onDelete('SET NULL'); // who sent it (sending_access keys read their own)
    t.string('domain_id').references('domains.id').onDelete('SET NULL');
    t.string('mode').notNullable(); // live | test
    t.string('from_header').notNullable(); // as given: `Name <addr>` or `addr`
    t.string('from_address').notNullable();
    t.string('from_domain').notNullable();
    t.text('to_addrs').notNullable(); // JSON arrays of the addresses as given
    t.text('cc_addrs').notNullable();
    t.text('bcc_addrs').notNullable();
    t.text('reply_to').notNullable();
    t.text('subject').notNullable();
    t.text('html');
    t.text('text');
    t.text('headers').notNullable(); // JSON object
    t.text('tags').notNullable(); // JSON array
    t.string('status').notNullable();
    t.string('message_id').notNullable();
    t.string('idempotency_key');
    t.string('request_hash');
    t.integer('job_id'); // the delivery job while one is waiting
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('scheduled_at');
    t.string('sent_at');
    t.string('delivered_at');
    t.string('created_at').notNullable();
    t.string('updated_at').notNullable();
    t.index(['team_id', 'created_at']);
    t.index(['team_id', 'status']);
    t.index(['team_id', 'idempotency_key']);
  });

  await knex.schema.createTable('email_recipients', (t) => {
    t.increments('id').primary();
    t.integer('email_id').notNullable().references('emails.id').onDelete('CASCADE');
    t.string('kind').notNullable(); // to | cc | bcc
    t.string('address').notNullable(); // bare address, lower-cased domain
    t.string('domain').notNullable();
    // queued | deferred | sent | delivered | bounced | failed | suppressed | cancelled | complained
    t.string('status').notNullable();
    t.string('last_code');
    t.text('last_message');
    t.string('bounce_category');
    t.string('updated_at').notNullable();
    t.index(['email_id']);
    t.index(['address']);
  });

  await knex.schema.createTable('email_attachments', (t) => {
    t.increments('id').primary();
    t.integer('email_id').notNullable().references('emails.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.string('filename').notNullable();
    t.string('content_type').notNullable();
    t.integer('size').notNullable();
    t.binary('content').notNullable();
    t.index(['email_id']);
  });

  await knex.schema.createTable('email_events', (t) => {
    t.increments('id').primary();
    t.integer('email_id').notNullable().references('emails.id').onDelete('CASCADE');
    t.string('type').notNullable(); // EmailEvent types of the spec
    t.text('data').notNullable();
    t.string('created_at').notNullable();
    t.index(['email_id', 'id']);
  });

  await knex.schema.createTable('suppressions', (t) => {
    t.increments('id').primary();
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('email').notNullable(); // lower-cased
    t.string('reason').notNullable(); // bounce | complaint | manual | unsubscribe
    t.text('details');
    t.string('created_at').notNullable();
    t.unique(['team_id', 'email']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['suppressions', 'email_events', 'email_attachments', 'email_recipients', 'emails']) await knex.schema.dropTableIfExists(table);
}
