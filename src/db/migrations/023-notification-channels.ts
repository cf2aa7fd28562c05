// Notification channels and the alert life cycle (services/notifications/channels.ts, platform/alerts.ts), and
// the DNS drift state and dedicated outbound address of a domain (platform/dns-drift.ts, domains.ts).
// Alerts gain an acknowledgement and a dedupe key (one alert per team and key: "quota 80 % in 2026-11");
// channels are where a team is told (a signed webhook, Slack, Discord, an e-mail address), each subscribed
// to alert kinds; every alert × channel is a delivery row with its own retry schedule, like webhook
// deliveries. The fan-out's durable cursor over the alerts table is a second row of webhook_dispatch.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('alerts', (t) => {
    t.string('acknowledged_at');
    t.string('dedupe_key');
    t.unique(['team_id', 'dedupe_key']);
  });
  await knex.schema.createTable('notification_channels', (t) => {
    t.increments('id').primary();
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('name').notNullable();
    t.string('type').notNullable(); // webhook | slack | discord | email
    // The URL or address, sealed (a Slack or Discord incoming-webhook URL is itself a credential), and the
    // form shown in the API (a webhook URL or an address in full; Slack/Discord URLs masked past the host).
    t.text('target_sealed').notNullable();
    t.string('target_shown').notNullable();
    t.text('secret_sealed'); // webhook channels: the signing secret
    t.text('alert_kinds').notNullable(); // JSON array
    t.boolean('enabled').notNullable().defaultTo(true);
    t.string('created_at').notNullable();
    t.string('updated_at').notNullable();
    t.index(['team_id', 'id']);
  });
  await knex.schema.createTable('notification_deliveries', (t) => {
    t.increments('id').primary();
    t.integer('channel_id').notNullable().references('notification_channels.id').onDelete('CASCADE');
    t.integer('alert_id').references('alerts.id').onDelete('SET NULL');
    t.string('alert_kind').notNullable(); // an alert kind, or `test`
    t.text('payload').notNullable(); // the alert as JSON: what every attempt renders
    t.string('status').notNullable(); // pending | delivered | failed
    t.integer('status_code');
    t.text('response_body');
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('next_retry_at');
    t.string('delivered_at');
    t.string('created_at').notNullable();
    t.index(['channel_id', 'id']);
  });
  // The periodic DNS drift check (platform/dns-drift.ts): the watched records found gone or wrong (JSON
  // array; null or empty: healthy) and when the check last ran.
  await knex.schema.alterTable('domains', (t) => {
    t.text('dns_drift');
    t.string('dns_checked_at');
    // A dedicated outbound address (one of MAIL_OUTBOUND_IPS), and the last verify's PTR check of it (JSON).
    t.string('dedicated_ip');
    t.text('dedicated_ip_check');
  });
  // Bounces of the blocking kinds (spam_block, policy) per team, receiving provider and UTC hour: the
  // delivery outcome counts them in its write transaction and raises `provider_blocking` at a threshold.
  await knex.schema.createTable('provider_blocks', (t) => {
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('provider').notNullable();
    t.string('hour').notNullable(); // 2026-11-29T07
    t.integer('count').notNullable();
    t.primary(['team_id', 'provider', 'hour']);
  });
  const [{ last }] = (await knex('alerts').max({ last: 'id' })) as [{ last: number | null }];
  await knex('webhook_dispatch').insert({ name: 'alerts', position: last ?? 0 });
}

export async function down(knex: Knex): Promise<void> {
  await knex('webhook_dispatch').where({ name: 'alerts' }).delete();
  await knex.schema.dropTableIfExists('provider_blocks');
  await knex.schema.alterTable('domains', (t) => {
    t.dropColumn('dedicated_ip_check');
    t.dropColumn('dedicated_ip');
    t.dropColumn('dns_checked_at');
    t.dropColumn('dns_drift');
  });
  await knex.schema.dropTableIfExists('notification_deliveries');
  await knex.schema.dropTableIfExists('notification_channels');
  await knex.schema.alterTable('alerts', (t) => {
    t.dropUnique(['team_id', 'dedupe_key']);
    t.dropColumn('dedupe_key');
    t.dropColumn('acknowledged_at');
  });
}
