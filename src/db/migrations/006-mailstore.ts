// The mail store (src/mailstore/): accounts, folders, content-addressed message sources, messages, the
// change feed (MODSEQ), shares, filters and aliases. Only src/mailstore/ reads or writes these tables.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('mailboxes', (t) => {
    t.increments('id').primary();
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('domain_id').notNullable().references('domains.id').onDelete('CASCADE');
    t.string('address').notNullable(); // lower-cased; unique among live accounts (partial index below)
    t.string('password_hash').notNullable(); // scrypt$N$r$p$salt$hash (base64)
    t.string('display_name');
    t.integer('quota_bytes').notNullable().defaultTo(0); // 0 = unlimited
    t.integer('used_bytes').notNullable().defaultTo(0);
    t.integer('highest_modseq').notNullable().defaultTo(1); // the mailbox's MODSEQ counter and change-feed cursor
    t.integer('last_uid_validity').notNullable().defaultTo(0); // keeps UIDVALIDITY unique per mailbox
    t.string('created_at').notNullable();
    t.string('updated_at').notNullable();
    t.string('deleted_at');
    t.index(['team_id', 'id']);
    t.index(['domain_id']);
  });
  await knex.raw('CREATE UNIQUE INDEX mailboxes_live_address ON mailboxes (address) WHERE deleted_at IS NULL');

  await knex.schema.createTable('mail_folders', (t) => {
    t.increments('id').primary();
    t.integer('mailbox_id').notNullable().references('mailboxes.id').onDelete('CASCADE');
    t.string('path').notNullable();
    t.string('special_use');
    t.boolean('subscribed').notNullable().defaultTo(true);
    t.integer('uid_validity').notNullable();
    t.integer('uid_next').notNullable().defaultTo(1);
    t.integer('highest_modseq').notNullable().defaultTo(1);
    t.string('created_at').notNullable();
    t.unique(['mailbox_id', 'path']);
  });

  // Raw RFC 5322 sources, once per content (hex SHA-256), with the parsed header summary (ENVELOPE fields)
  // computed at first store. `refcount` = number of message rows pointing here; 0 → deleted in the same
  // transaction that dropped the last reference.
  await knex.schema.createTable('mail_blobs', (t) => {
    t.string('id').primary();
    t.binary('raw').notNullable();
    t.integer('size').notNullable();
    t.text('summary').notNullable(); // JSON MessageSummary
    t.integer('refcount').notNullable();
    t.string('created_at').notNullable();
  });

  // Clustered by (folder_id, uid): listing a folder is one range scan. Flags in a compact form: the flags
  // joined by single spaces (IMAP flags are atoms, so they contain no space), '' for none.
  await knex.raw(`CREATE TABLE mail_messages (
    folder_id INTEGER NOT NULL REFERENCES mail_folders(id) ON DELETE CASCADE,
    uid INTEGER NOT NULL,
    modseq INTEGER NOT NULL,
    flags TEXT NOT NULL DEFAULT '',
    internal_date TEXT NOT NULL,
    size INTEGER NOT NULL,
    blob_id TEXT NOT NULL,
    PRIMARY KEY (folder_id, uid)
  ) WITHOUT ROWID`);
  await knex.raw('CREATE INDEX mail_messages_modseq ON mail_messages (folder_id, modseq)');

  // The change feed: one row per changed message (or folder), cursor = mailbox MODSEQ. Kept after expunge
  // (QRESYNC needs the expunged UIDs). kind: append | flags | expunge | folder.
  await knex.schema.createTable('mail_changes', (t) => {
    t.increments('id').primary();
    t.integer('mailbox_id').notNullable().references('mailboxes.id').onDelete('CASCADE');
    t.integer('modseq').notNullable();
    t.integer('folder_id').notNullable(); // no FK: survives the folder's deletion
    t.string('kind').notNullable();
    t.integer('uid');
    t.text('flags'); // compact flags (kind flags); for kind folder: created | deleted | renamed
    t.string('path'); // kind folder: the folder's path after the change
    t.index(['mailbox_id', 'modseq']);
  });

  await knex.schema.createTable('mailbox_shares', (t) => {
    t.integer('owner_id').notNullable().references('mailboxes.id').onDelete('CASCADE');
    t.integer('target_id').notNullable().references('mailboxes.id').onDelete('CASCADE');
    t.string('access').notNullable(); // read | read-write
    t.string('created_at').notNullable();
    t.primary(['owner_id', 'target_id']);
    t.index(['target_id']);
  });

  await knex.schema.createTable('mailbox_filters', (t) => {
    t.integer('mailbox_id').notNullable().references('mailboxes.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.text('rule').notNullable(); // JSON FilterRule
    t.primary(['mailbox_id', 'position']);
  });

  await knex.schema.createTable('mail_aliases', (t) => {
    t.increments('id').primary();
    t.string('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('domain_id').notNullable().references('domains.id').onDelete('CASCADE');
    t.string('address').notNullable().unique(); // lower-cased; `*@domain` is the domain's catch-all
    t.string('created_at').notNullable();
    t.index(['team_id', 'id']);
  });
  await knex.schema.createTable('mail_alias_targets', (t) => {
    t.integer('alias_id').notNullable().references('mail_aliases.id').onDelete('CASCADE');
    t.integer('mailbox_id').notNullable().references('mailboxes.id').onDelete('CASCADE');
    t.primary(['alias_id', 'mailbox_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['mail_alias_targets', 'mail_aliases', 'mailbox_filters', 'mailbox_shares', 'mail_changes', 'mail_messages', 'mail_blobs', 'mail_folders', 'mailboxes']) {
    await knex.schema.dropTableIfExists(table);
  }
}
