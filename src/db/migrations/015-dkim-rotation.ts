// DKIM key rotation and key types (services/platform/dkim-rotation.ts). Each key says its algorithm (`rsa`, or
// `ed25519`, which a domain uses beside an RSA key), when a rotation's activation made it sign, and when it was
// retired. The states: pending (made by a rotation, published by the customer, not signing yet), active
// (signs), retiring (replaced, still published until retire_after), retired (its private key deleted — the
// sealed column emptied — and its record to be removed from the DNS; the row goes once a verify finds the
// record gone).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('dkim_keys', (t) => {
    t.string('algorithm').notNullable().defaultTo('rsa');
    t.string('activated_at');
    t.string('retired_at');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex('dkim_keys').whereNot('algorithm', 'rsa').delete();
  await knex('dkim_keys').where('state', 'retired').delete();
  await knex.schema.alterTable('dkim_keys', (t) => {
    t.dropColumn('retired_at');
    t.dropColumn('activated_at');
    t.dropColumn('algorithm');
  });
}
