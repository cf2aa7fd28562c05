// Inbound mail: the per-domain routing setting, inbound emails routed to webhooks (with their
// attachments), and DMARC aggregate reports received at the rua address the box publishes.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // none | webhook | mailbox_then_webhook | mailbox_and_webhook (services/inbound/routing.ts)
  await knex.schema.alterTable('domains', (t) => {
    t.string('inbound_mode').notNullable().defaultTo('none');
  });

  await knex.schema.createTable('inbound_emails', (t) => {
    t.increments('id').primary(); // the spec's integer inbound email id
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('domain_id').references('domains.id').onDelete('SET NULL');
    t.string('domain').notNullable(); // the domain name it was addressed to (the `domain` filter)
    t.string('mail_from').notNullable(); // envelope sender ('' for a null reverse path)
    t.text('rcpt_to').notNullable(); // JSON array: envelope recipients on this domain
    t.text('from_header').notNullable();
    t.text('to_addrs').notNullable(); // JSON arrays of `Name <addr>` / `addr`
    t.text('cc_addrs').notNullable();
    t.text('reply_to').notNullable();
    t.text('subject').notNullable();
    t.text('text');
    t.text('html');
    t.text('headers').notNullable(); // JSON array of { name, value } in message order
    t.string('message_id');
    t.text('in_reply_to');
    t.text('references');
    t.string('sent_at'); // the Date header
    t.text('auth').notNullable(); // JSON: spf, dkim, dmarc, arc results
    t.boolean('junk').notNullable().defaultTo(false); // DMARC reject kept (MAIL_INBOUND_DMARC_REJECT=junk)
    t.text('mailbox_ids').notNullable(); // JSON array: mailboxes that also got the message (draft-reply)
    t.binary('raw').notNullable(); // the message as stored (with our trace headers)
    t.integer('size').notNullable();
    t.string('created_at').notNullable();
    t.index(['team_id', 'id']);
    t.index(['team_id', 'domain']);
  });

  await knex.schema.createTable('inbound_attachments', (t) => {
    t.increments('id').primary();
    t.integer('inbound_email_id').notNullable().references('inbound_emails.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.string('filename');
    t.string('content_type').notNullable();
    t.string('content_id');
    t.string('disposition');
    t.integer('size').notNullable();
    t.binary('content').notNullable();
    t.index(['inbound_email_id']);
  });

  await knex.schema.createTable('dmarc_reports', (t) => {
    t.increments('id').primary();
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('domain_id').notNullable().references('domains.id').onDelete('CASCADE');
    t.string('org_name').notNullable();
    t.string('org_email');
    t.string('report_id').notNullable();
    t.string('date_begin').notNullable();
    t.string('date_end').notNullable();
    t.text('policy').notNullable(); // JSON: policy_published
    t.text('records').notNullable(); // JSON array of rows
    t.integer('message_count').notNullable();
    t.integer('pass_count').notNullable(); // messages whose DMARC result passed (DKIM or SPF aligned pass)
    t.integer('fail_count').notNullable();
    t.string('received_at').notNullable();
    t.unique(['domain_id', 'org_name', 'report_id']);
    t.index(['domain_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['dmarc_reports', 'inbound_attachments', 'inbound_emails']) await knex.schema.dropTableIfExists(table);
  await knex.schema.alterTable('domains', (t) => {
    t.dropColumn('inbound_mode');
  });
}
