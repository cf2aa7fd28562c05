// Indexes for the retention job's new prunes (services/housekeeping/retention.ts): each finds its oldest rows by
// age without scanning its table. Finished workflow runs by team and when they finished (a team's
// plan sets its window); OAuth codes and tokens by when
// they expire; the provider block counters by hour; contacts still waiting for a double opt-in confirmation, and
// a contact's workflow runs.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX workflow_runs_finished ON workflow_runs (team_id, finished_at) WHERE active = 0');
  await knex.raw('CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at)');
  await knex.raw('CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at)');
  await knex.raw('CREATE INDEX provider_blocks_hour ON provider_blocks (hour)');
  await knex.raw("CREATE INDEX contacts_opt_in_pending ON contacts (pk) WHERE opt_in_status = 'pending'");
  // A contact's runs: whether an unconfirmed contact has any, and the ON DELETE SET NULL of any contact's delete.
  await knex.raw('CREATE INDEX workflow_runs_contact ON workflow_runs (contact_pk)');
}

export async function down(knex: Knex): Promise<void> {
  for (const i of ['workflow_runs_contact', 'contacts_opt_in_pending', 'provider_blocks_hour', 'oauth_tokens_expires', 'oauth_codes_expires', 'workflow_runs_finished']) await knex.raw(`DROP INDEX IF EXISTS ${i}`);
}
