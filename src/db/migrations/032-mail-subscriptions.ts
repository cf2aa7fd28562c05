// IMAP subscriptions kept apart from folders (RFC 3501 §6.3.6, RFC 9051 §6.3.7: a subscription is a name; the
// server "MUST NOT unilaterally remove an existing mailbox name from the subscription list even if a mailbox
// by that name no longer exists"). One row per subscribed name of a mailbox (account); the folders that were
// subscribed (`mail_folders.subscribed`) are carried over. That column stays (the delivery writer still reads
// it with a folder's row) but nothing reads it as the subscription any more.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE mail_subscriptions (
    mailbox_id INTEGER NOT NULL REFERENCES mailboxes(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (mailbox_id, path)
  ) WITHOUT ROWID`);
  await knex.raw(`INSERT INTO mail_subscriptions (mailbox_id, path, created_at)
    SELECT mailbox_id, path, created_at FROM mail_folders WHERE subscribed = 1`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('UPDATE mail_folders SET subscribed = (EXISTS (SELECT 1 FROM mail_subscriptions s WHERE s.mailbox_id = mail_folders.mailbox_id AND s.path = mail_folders.path))');
  await knex.raw('DROP TABLE mail_subscriptions');
}
