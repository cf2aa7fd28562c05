// Templates (services/templates/): a template and its versions. Every change is a new version (kept, listed,
// restorable); a template is published at one version (or none: a draft), and sends use that version. An
// email records the template and version it was rendered from.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE templates (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    current_version INTEGER NOT NULL,
    published_version INTEGER,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`);
  await knex.raw('CREATE INDEX templates_team_updated ON templates (team_id, updated_at)');
  // builder_type: html | visual (builder_blocks then holds the block tree the html was compiled from).
  await knex.raw(`CREATE TABLE template_versions (
    template_pk INTEGER NOT NULL REFERENCES templates(pk) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    subject TEXT NOT NULL,
    html TEXT NOT NULL,
    text TEXT,
    variables TEXT NOT NULL,
    builder_type TEXT NOT NULL,
    builder_blocks TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (template_pk, version)
  ) WITHOUT ROWID`);
  await knex.schema.alterTable('emails', (t) => {
    t.string('template_id');
    t.integer('template_version');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('emails', (t) => {
    t.dropColumn('template_version');
    t.dropColumn('template_id');
  });
  for (const table of ['template_versions', 'templates']) await knex.schema.dropTableIfExists(table);
}
