// Ordered list of migrations; knex records the applied names in knex_migrations.
import type { Knex } from 'knex';
import * as initial from './001-initial.js';
import * as jobs from './002-jobs.js';
import * as emails from './003-emails.js';
import * as webhooks from './004-webhooks.js';
import * as limits from './005-limits.js';
import * as mailstore from './006-mailstore.js';
import * as inbound from './007-inbound.js';
import * as submission from './008-submission.js';
import * as mailstoreState from './009-mailstore-state.js';
import * as jobLanes from './010-job-lanes.js';
import * as emailMessageIds from './011-email-message-ids.js';
import * as emailBodies from './012-email-bodies.js';
import * as recipientAddressIndex from './013-recipient-address-index.js';
import * as audience from './014-audience.js';
import * as dkimRotation from './015-dkim-rotation.js';
import * as templates from './017-templates.js';
import * as tracking from './018-tracking.js';
import * as broadcasts from './019-broadcasts.js';
import * as oauth from './020-oauth.js';
import * as signupForms from './021-signup-forms.js';
import * as workflows from './022-workflows.js';
import * as notificationChannels from './023-notification-channels.js';
import * as trustedDomains from './024-trusted-domains.js';
import * as imapRecent from './026-imap-recent.js';
import * as imapQresync from './027-imap-qresync.js';
import * as mailFts from './028-mail-fts.js';
import * as imapSortKeys from './029-imap-sort-keys.js';
import * as retentionIndexes from './030-retention-indexes.js';
import * as mailFtsPending from './031-mail-fts-pending.js';
import * as mailSubscriptions from './032-mail-subscriptions.js';

export interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

export const migrations: Migration[] = [
  { name: '001-initial', ...initial },
  { name: '002-jobs', ...jobs },
  { name: '003-emails', ...emails },
  { name: '004-webhooks', ...webhooks },
  { name: '005-limits', ...limits },
  { name: '006-mailstore', ...mailstore },
  { name: '007-inbound', ...inbound },
  { name: '008-submission', ...submission },
  { name: '009-mailstore-state', ...mailstoreState },
  { name: '010-job-lanes', ...jobLanes },
  { name: '011-email-message-ids', ...emailMessageIds },
  { name: '012-email-bodies', ...emailBodies },
  { name: '013-recipient-address-index', ...recipientAddressIndex },
  { name: '014-audience', ...audience },
  { name: '015-dkim-rotation', ...dkimRotation },
  { name: '017-templates', ...templates },
  { name: '018-tracking', ...tracking },
  { name: '019-broadcasts', ...broadcasts },
  { name: '020-oauth', ...oauth },
  { name: '021-signup-forms', ...signupForms },
  { name: '022-workflows', ...workflows },
  { name: '023-notification-channels', ...notificationChannels },
  { name: '024-trusted-domains', ...trustedDomains },
  { name: '026-imap-recent', ...imapRecent },
  { name: '027-imap-qresync', ...imapQresync },
  { name: '028-mail-fts', ...mailFts },
  { name: '029-imap-sort-keys', ...imapSortKeys },
  { name: '030-retention-indexes', ...retentionIndexes },
  { name: '031-mail-fts-pending', ...mailFtsPending },
  { name: '032-mail-subscriptions', ...mailSubscriptions },
];

/** knex's migration source over an ordered list (all of `migrations`, or a prefix of it to build an older store). */
export function migrationSource(list: readonly Migration[] = migrations): Knex.MigrationSource<Migration> {
  return {
    getMigrations: async () => [...list],
    getMigrationName: (m) => m.name,
    getMigration: async (m) => m,
  };
}
