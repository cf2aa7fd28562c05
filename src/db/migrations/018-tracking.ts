// Open and click tracking (services/sending/tracking.ts). A domain may name a tracking subdomain
// (`tracking_subdomain`: one label, published as a CNAME to the box and checked by verify); each email's
// recipient gets one row per kind of hit (`email_engagement`: recipient_id 0 when the email has several
// recipients, which one message serves alike): how many hits, how many of them machines' (Apple Mail Privacy
// Protection, link scanners), the first hit, the first hit of a person, the last. Each hit itself is a
// timeline entry (`email_events`, type opened or clicked) and a webhook event (email.opened, email.clicked).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('domains', (t) => {
    t.string('tracking_subdomain');
  });
  await knex.raw(`CREATE TABLE email_engagement (
    email_id INTEGER NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
    recipient_id INTEGER NOT NULL,
    kind TEXT NOT NULL,
    hits INTEGER NOT NULL,
    machine_hits INTEGER NOT NULL,
    first_at TEXT NOT NULL,
    first_person_at TEXT,
    last_at TEXT NOT NULL,
    PRIMARY KEY (email_id, recipient_id, kind)
  ) WITHOUT ROWID`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS email_engagement');
  await knex.schema.alterTable('domains', (t) => {
    t.dropColumn('tracking_subdomain');
  });
}
