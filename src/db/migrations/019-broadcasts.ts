// Broadcasts (services/campaigns/): a campaign to a whole audience. A broadcast row holds what is sent (or
// its A/B variants), to whom (segments, a topic) and where it stands; `broadcast_recipients` is its audience
// frozen when sending starts (one row per contact, written in pages by INSERT … SELECT), each row marked with
// the email it became in the same transaction as that email (so a crash neither loses nor doubles one). An
// email made for a broadcast names it (`emails.broadcast_id`, the public `bc_…` id), which the analytics and
// the in-flight count of the fan-out read through a partial index.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // status: draft | scheduled | testing | waiting_for_winner | sending | sent | cancelled | failed.
  // ab_test: JSON { variants: [{ name, subject, weight, html, text }], test_duration_minutes, test_percentage } or NULL.
  // audience_max_pk: the team's highest contact key when sending started (the frozen audience is at most that).
  await knex.raw(`CREATE TABLE broadcasts (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    from_header TEXT NOT NULL,
    reply_to TEXT,
    subject TEXT NOT NULL,
    html TEXT,
    text TEXT,
    template_id TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    segment_ids TEXT NOT NULL DEFAULT '[]',
    topic_id TEXT,
    ab_test TEXT,
    status TEXT NOT NULL,
    scheduled_at TEXT,
    resend_of TEXT,
    resend_to TEXT,
    api_key_id TEXT,
    mode TEXT NOT NULL DEFAULT 'live',
    audience_max_pk INTEGER,
    start_job_id INTEGER,
    frozen INTEGER NOT NULL DEFAULT 0,
    recipient_count INTEGER NOT NULL DEFAULT 0,
    test_ends_at TEXT,
    winner TEXT,
    winner_reason TEXT,
    failure TEXT,
    started_at TEXT,
    sent_at TEXT,
    cancelled_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`);
  await knex.raw('CREATE INDEX broadcasts_team_pk ON broadcasts (team_id, pk)');
  // status: pending (not handed to the send path yet) | queued (its email written: email_id) | failed (the send
  // path refused it: error) | cancelled. variant: the A/B variant (0-based) of a test-group recipient; NULL for
  // the rest (they get the winner). bucket: a random number drawn at freeze that orders the test split.
  await knex.raw(`CREATE TABLE broadcast_recipients (
    broadcast_pk INTEGER NOT NULL REFERENCES broadcasts(pk) ON DELETE CASCADE,
    contact_pk INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    variant INTEGER,
    status TEXT NOT NULL,
    email_id INTEGER,
    error TEXT,
    PRIMARY KEY (broadcast_pk, contact_pk)
  ) WITHOUT ROWID`);
  await knex.raw('CREATE INDEX broadcast_recipients_status ON broadcast_recipients (broadcast_pk, status, contact_pk)');
  await knex.schema.alterTable('emails', (t) => {
    t.string('broadcast_id');
  });
  await knex.raw('CREATE INDEX emails_broadcast_status ON emails (broadcast_id, status) WHERE broadcast_id IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS emails_broadcast_status');
  await knex.schema.alterTable('emails', (t) => t.dropColumn('broadcast_id'));
  for (const table of ['broadcast_recipients', 'broadcasts']) await knex.schema.dropTableIfExists(table);
}
