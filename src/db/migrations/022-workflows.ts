// Workflows (services/automation/workflows*.ts): a workflow's graph, its runs (one row per contact's position
// in the graph) and each run's steps with their outcomes; the intake's cursor over the team event log; an
// inbox for what the event log does not carry (custom events of POST /workflows/events, and the signals
// below).
//
// A contact added to a manual segment and a contact's topic subscription leave no row in the event log, so
// two triggers of the database itself write a signal into the inbox, whoever changes those tables and only
// while an active workflow waits for that segment or topic (the audience's code is not touched, as the
// contacts' search index is kept by triggers).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // status: draft | active | paused. trigger_type/trigger_key/trigger_pk: the graph's trigger, for matching
  // without parsing the graph (trigger_pk: the segment's or topic's pk for those triggers).
  // AUTOINCREMENT (here and for runs): a job names its workflow or run by pk, so a pk is never used again.
  await knex.raw(`CREATE TABLE workflows (
    pk INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    graph TEXT,
    graph_version INTEGER NOT NULL DEFAULT 0,
    trigger_type TEXT,
    trigger_key TEXT,
    trigger_pk INTEGER,
    timezone TEXT NOT NULL,
    allow_concurrent_runs INTEGER NOT NULL DEFAULT 0,
    mode TEXT NOT NULL,
    secret_sealed TEXT NOT NULL,
    from_event_id INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    activated_at TEXT
  )`);
  await knex.raw('CREATE INDEX workflows_team_pk ON workflows (team_id, pk)');
  await knex.raw('CREATE INDEX workflows_trigger ON workflows (trigger_type, status, team_id)');

  // A contact's position: step (the step it is at), state: ready (a step job will run it) | waiting (a wait
  // job is due at wake_at) | paused (its workflow was paused; resumed on activate) | completed | exited |
  // failed. active: 1 until it ends; one active run per workflow and contact unless the workflow allows more.
  await knex.raw(`CREATE TABLE workflow_runs (
    pk INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    workflow_pk INTEGER NOT NULL REFERENCES workflows(pk) ON DELETE CASCADE,
    team_id TEXT NOT NULL,
    contact_pk INTEGER REFERENCES contacts(pk) ON DELETE SET NULL,
    contact_id TEXT NOT NULL,
    email TEXT NOT NULL,
    trigger TEXT NOT NULL,
    step TEXT,
    seq INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL,
    active INTEGER NOT NULL DEFAULT 1,
    exclusive INTEGER NOT NULL DEFAULT 1,
    wake_at TEXT,
    reason TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    finished_at TEXT
  )`);
  await knex.raw('CREATE INDEX workflow_runs_workflow ON workflow_runs (workflow_pk, pk)');
  await knex.raw('CREATE INDEX workflow_runs_paused ON workflow_runs (workflow_pk, state) WHERE active = 1');
  await knex.raw('CREATE UNIQUE INDEX workflow_runs_one_active ON workflow_runs (workflow_pk, contact_pk) WHERE active = 1 AND exclusive = 1');

  // What each step of a run did: outcome and reason (why an email was or was not sent), and its data (the
  // email id of a send, the answer of a webhook, the branch of a condition). seq orders a run's steps; a send's
  // idempotency key is the run's id and the step's seq, so a step run again after a crash sends nothing new.
  await knex.raw(`CREATE TABLE workflow_run_steps (
    pk INTEGER PRIMARY KEY,
    run_pk INTEGER NOT NULL REFERENCES workflow_runs(pk) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    step_id TEXT NOT NULL,
    type TEXT NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT,
    data TEXT NOT NULL DEFAULT '{}',
    email_id TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (run_pk, seq)
  )`);

  // The intake's cursor over the events table (as webhook_dispatch is the dispatcher's).
  await knex.raw('CREATE TABLE workflow_intake (name TEXT PRIMARY KEY, position INTEGER NOT NULL)');
  await knex.raw(`INSERT INTO workflow_intake (name, position) VALUES ('events', (SELECT coalesce(max(id), 0) FROM events))`);

  // kind: event (POST /workflows/events: key = the event's name) | segment (key = segment pk) | topic (key =
  // topic pk). Rows are deleted once the intake has read them.
  await knex.raw(`CREATE TABLE workflow_inbox (
    pk INTEGER PRIMARY KEY,
    team_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    contact_pk INTEGER NOT NULL,
    data TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL
  )`);
  await knex.raw(`CREATE TRIGGER workflow_segment_signal AFTER INSERT ON segment_contacts
    WHEN EXISTS (SELECT 1 FROM workflows WHERE trigger_type = 'segment.added' AND trigger_pk = new.segment_pk AND status = 'active')
    BEGIN
      INSERT INTO workflow_inbox (team_id, kind, key, contact_pk, created_at)
      SELECT team_id, 'segment', CAST(new.segment_pk AS TEXT), new.contact_pk, new.created_at FROM segments WHERE pk = new.segment_pk;
    END`);
  await knex.raw(`CREATE TRIGGER workflow_topic_signal AFTER INSERT ON topic_subscriptions
    WHEN new.subscribed = 1 AND EXISTS (SELECT 1 FROM workflows WHERE trigger_type = 'topic.subscribed' AND trigger_pk = new.topic_pk AND status = 'active')
    BEGIN
      INSERT INTO workflow_inbox (team_id, kind, key, contact_pk, created_at)
      SELECT team_id, 'topic', CAST(new.topic_pk AS TEXT), new.contact_pk, new.updated_at FROM topics WHERE pk = new.topic_pk;
    END`);
  await knex.raw(`CREATE TRIGGER workflow_topic_resignal AFTER UPDATE OF subscribed ON topic_subscriptions
    WHEN new.subscribed = 1 AND old.subscribed = 0 AND EXISTS (SELECT 1 FROM workflows WHERE trigger_type = 'topic.subscribed' AND trigger_pk = new.topic_pk AND status = 'active')
    BEGIN
      INSERT INTO workflow_inbox (team_id, kind, key, contact_pk, created_at)
      SELECT team_id, 'topic', CAST(new.topic_pk AS TEXT), new.contact_pk, new.updated_at FROM topics WHERE pk = new.topic_pk;
    END`);
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['workflow_segment_signal', 'workflow_topic_signal', 'workflow_topic_resignal']) await knex.raw(`DROP TRIGGER IF EXISTS ${t}`);
  for (const table of ['workflow_inbox', 'workflow_intake', 'workflow_run_steps', 'workflow_runs', 'workflows']) await knex.schema.dropTableIfExists(table);
}
