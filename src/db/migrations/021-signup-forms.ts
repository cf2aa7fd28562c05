// Hosted signup forms with double opt-in (services/automation/signup-forms.ts): the forms, each signup (who
// asked to join through which form, what they typed, whether they confirmed), and where a contact stands with
// its opt-in.
//
// contacts.opt_in_status: 'none' (added by the API, a CSV import or a form without double opt-in: nothing to
// confirm), 'pending' (created by a double opt-in signup and not confirmed yet: receives no marketing mail) or
// 'confirmed'. contacts.confirmed_at: when it confirmed. Every existing contact is 'none'.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw("ALTER TABLE contacts ADD COLUMN opt_in_status TEXT NOT NULL DEFAULT 'none'");
  await knex.raw('ALTER TABLE contacts ADD COLUMN confirmed_at TEXT');
  // A form's fields, topics, allowed origins and confirmation email are JSON (read and written whole).
  // mode: the mode of the key that created the form (live/test): its confirmation emails go out in that mode.
  await knex.raw(`CREATE TABLE signup_forms (
    pk INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    fields TEXT NOT NULL,
    segment_id TEXT,
    topic_ids TEXT NOT NULL,
    double_opt_in TEXT,
    success_message TEXT,
    redirect_url TEXT,
    allowed_origins TEXT NOT NULL,
    mode TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`);
  await knex.raw('CREATE INDEX signup_forms_team ON signup_forms (team_id, pk)');
  // status: pending | confirmed. created_contact: this signup made the contact (then its confirmation records
  // contact.created; else contact.updated). email_id: the confirmation email once accepted by the send path (the
  // job that sends it looks, so a retried job sends once).
  await knex.raw(`CREATE TABLE signups (
    pk INTEGER PRIMARY KEY AUTOINCREMENT,
    form_pk INTEGER NOT NULL REFERENCES signup_forms(pk) ON DELETE CASCADE,
    contact_pk INTEGER NOT NULL REFERENCES contacts(pk) ON DELETE CASCADE,
    properties TEXT NOT NULL,
    status TEXT NOT NULL,
    created_contact INTEGER NOT NULL,
    email_id TEXT,
    created_at TEXT NOT NULL,
    confirmed_at TEXT
  )`);
  await knex.raw('CREATE INDEX signups_form_contact ON signups (form_pk, contact_pk, pk)');
  await knex.raw('CREATE INDEX signups_contact ON signups (contact_pk)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE signups');
  await knex.raw('DROP TABLE signup_forms');
  await knex.raw('ALTER TABLE contacts DROP COLUMN confirmed_at');
  await knex.raw('ALTER TABLE contacts DROP COLUMN opt_in_status');
}
