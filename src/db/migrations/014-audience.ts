// The audience (services/audience/): contacts with typed custom properties, manual and dynamic segments,
// subscription topics and each contact's choice per topic; suppressions gain the email that caused them.
//
// Rows join on integer keys (`pk`, SQLite's rowid); the public ids (`ct_…`, `seg_…`, …) are time-ordered, so
// their unique indexes grow at their end. A contact's `search` column is what `GET /contacts?search=` looks
// in (its email, first and last name, lower-cased), indexed by trigrams.
// last_sent/opened/clicked_at feed the engagement segments; engagement tracking keeps them (NULL until then).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE contacts (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    email_key TEXT NOT NULL,
    first_name TEXT,
    last_name TEXT,
    unsubscribed INTEGER NOT NULL DEFAULT 0,
    properties TEXT NOT NULL DEFAULT '{}',
    search TEXT NOT NULL,
    last_sent_at TEXT,
    last_opened_at TEXT,
    last_clicked_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (team_id, email_key)
  )`);
  await knex.raw('CREATE INDEX contacts_team_pk ON contacts (team_id, pk)');
  // Substring search without a scan: an FTS5 trigram index over `search` (queries of 3+ characters; shorter
  // ones scan the team's contacts), kept by triggers whoever writes the contacts.
  await knex.raw(`CREATE VIRTUAL TABLE contacts_search USING fts5(search, content='contacts', content_rowid='pk', tokenize='trigram')`);
  await knex.raw(`CREATE TRIGGER contacts_search_insert AFTER INSERT ON contacts BEGIN
    INSERT INTO contacts_search (rowid, search) VALUES (new.pk, new.search);
  END`);
  await knex.raw(`CREATE TRIGGER contacts_search_delete AFTER DELETE ON contacts BEGIN
    INSERT INTO contacts_search (contacts_search, rowid, search) VALUES ('delete', old.pk, old.search);
  END`);
  await knex.raw(`CREATE TRIGGER contacts_search_update AFTER UPDATE OF search ON contacts BEGIN
    INSERT INTO contacts_search (contacts_search, rowid, search) VALUES ('delete', old.pk, old.search);
    INSERT INTO contacts_search (rowid, search) VALUES (new.pk, new.search);
  END`);

  await knex.raw(`CREATE TABLE contact_properties (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (team_id, name)
  )`);

  // rules: NULL for a manual segment (members in segment_contacts), else the JSON rule tree evaluated at read.
  await knex.raw(`CREATE TABLE segments (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    rules TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`);
  await knex.raw('CREATE INDEX segments_team_pk ON segments (team_id, pk)');
  await knex.raw(`CREATE TABLE segment_contacts (
    segment_pk INTEGER NOT NULL REFERENCES segments(pk) ON DELETE CASCADE,
    contact_pk INTEGER NOT NULL REFERENCES contacts(pk) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (segment_pk, contact_pk)
  ) WITHOUT ROWID`);
  await knex.raw('CREATE INDEX segment_contacts_contact ON segment_contacts (contact_pk)');

  // default_subscription: opt_in (contacts are subscribed until they opt out) | opt_out (until they opt in).
  await knex.raw(`CREATE TABLE topics (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT,
    default_subscription TEXT NOT NULL,
    visibility TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`);
  await knex.raw('CREATE INDEX topics_team_pk ON topics (team_id, pk)');
  // A contact's own choice for a topic; without a row the topic's default applies.
  await knex.raw(`CREATE TABLE topic_subscriptions (
    topic_pk INTEGER NOT NULL REFERENCES topics(pk) ON DELETE CASCADE,
    contact_pk INTEGER NOT NULL REFERENCES contacts(pk) ON DELETE CASCADE,
    subscribed INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (topic_pk, contact_pk)
  ) WITHOUT ROWID`);
  await knex.raw('CREATE INDEX topic_subscriptions_contact ON topic_subscriptions (contact_pk)');

  await knex.schema.alterTable('suppressions', (t) => {
    t.string('email_id'); // the email whose bounce or complaint put the address here (public id), if any
  });
  await knex.raw('CREATE INDEX suppressions_team_id ON suppressions (team_id, id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS suppressions_team_id');
  await knex.schema.alterTable('suppressions', (t) => t.dropColumn('email_id'));
  for (const table of ['topic_subscriptions', 'topics', 'segment_contacts', 'segments', 'contact_properties', 'contacts_search', 'contacts']) await knex.schema.dropTableIfExists(table);
}
