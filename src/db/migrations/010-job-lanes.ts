// Job lanes (src/jobs/queue.ts): the destination a job waits on, so that one destination's backlog cannot
// take every running slot. NULL: no lane.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE jobs ADD COLUMN lane TEXT');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE jobs DROP COLUMN lane');
}
