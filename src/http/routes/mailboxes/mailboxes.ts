// Mailboxes API (spec: Mailboxes). OAuth scope `mailboxes:manage`: with API keys, full_access keys only.
// /mailboxes/aliases is declared before /mailboxes/{id} so that it is not taken for a mailbox id.
import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { Success } from '../../schemas/common.js';
import {
  Alias,
  AliasPage,
  CreateAlias,
  CreateMailbox,
  CreateShare,
  FilterRule,
  Mailbox,
  MailboxListQuery,
  MailboxPage,
  PutFilters,
  SetMailboxPassword,
  Share,
  UpdateMailbox,
} from '../../schemas/mailboxes/mailboxes.js';
import { parsePaging } from '../../../core/paging.js';
import { addShare, createAlias, createMailbox, deleteAlias, deleteMailbox, getFilters, getMailbox, listAliases, listMailboxes, listShares, putFilters, removeShare, setMailboxPassword, updateMailbox } from '../../../services/mailboxes/index.js';
import type { FilterRule as StoreFilterRule } from '../../../mailstore/types.js';

const tag = 'Mailboxes';
const access = 'full_access' as const;

export const mailboxRoutes = [
  // ---- aliases first (route order) ----
  defineRoute({
    method: 'GET',
    path: '/mailboxes/aliases',
    summary: "The team's aliases and catch-alls, newest first (Form A paging)",
    tag,
    access,
    paged: true,
    response: AliasPage,
    async handle({ app, principal, rawQuery }) {
      return listAliases(app, principal, parsePaging(rawQuery));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/mailboxes/aliases',
    summary: 'Create an alias delivering to one or more mailboxes of the team; `*@domain` is the domain catch-all',
    tag,
    access,
    body: CreateAlias,
    status: 201,
    response: Alias,
    async handle({ app, principal, body }) {
      return createAlias(app, principal, body);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/mailboxes/aliases/{id}',
    summary: 'Delete an alias',
    tag,
    access,
    response: Success,
    async handle({ app, principal, params }) {
      await deleteAlias(app, principal, params.id!);
      return { success: true };
    },
  }),

  // ---- mailboxes ----
  defineRoute({
    method: 'POST',
    path: '/mailboxes',
    summary: 'Create a mailbox (IMAP/POP3/SMTP login = its address) on a verified domain of the team; Pro plan and above',
    tag,
    access,
    body: CreateMailbox,
    status: 201,
    // The spec's answer is `success`; the mailbox's fields come with it.
    response: Mailbox.extend({ success: z.literal(true) }),
    async handle({ app, principal, body }) {
      return { success: true as const, ...(await createMailbox(app, principal, body)) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/mailboxes',
    summary: "The team's mailboxes, newest first, deleted ones omitted (Form A paging; `domain_id` filter)",
    tag,
    access,
    query: MailboxListQuery,
    paged: true,
    response: MailboxPage,
    async handle({ app, principal, query, rawQuery }) {
      return listMailboxes(app, principal, query.domain_id, parsePaging(rawQuery));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/mailboxes/{id}',
    summary: 'Get a mailbox',
    tag,
    access,
    response: Mailbox,
    async handle({ app, principal, params }) {
      return getMailbox(app, principal, params.id!);
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/mailboxes/{id}',
    summary: 'Change the display name or the quota (bytes, 0 = unlimited)',
    tag,
    access,
    body: UpdateMailbox,
    response: Mailbox,
    async handle({ app, principal, params, body }) {
      return updateMailbox(app, principal, params.id!, body);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/mailboxes/{id}',
    summary: 'Delete a mailbox (soft): its address stops receiving and its logins stop working at once',
    tag,
    access,
    response: Success,
    async handle({ app, principal, params }) {
      await deleteMailbox(app, principal, params.id!);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/mailboxes/{id}/password',
    summary: 'Set a new password (at least 8 characters)',
    tag,
    access,
    body: SetMailboxPassword,
    response: Success,
    async handle({ app, principal, params, body }) {
      await setMailboxPassword(app, principal, params.id!, body.password);
      return { success: true };
    },
  }),

  // ---- shares ----
  defineRoute({
    method: 'GET',
    path: '/mailboxes/{id}/shares',
    summary: 'Who may open this mailbox (IMAP shows it to them under the shared namespace)',
    tag,
    access,
    response: z.object({ shares: z.array(Share) }),
    async handle({ app, principal, params }) {
      return { shares: await listShares(app, principal, params.id!) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/mailboxes/{id}/shares',
    summary: 'Give another mailbox of the team read or read-write access (again: changes the access)',
    tag,
    access,
    body: CreateShare,
    status: 201,
    response: Share,
    async handle({ app, principal, params, body }) {
      return addShare(app, principal, params.id!, body);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/mailboxes/{id}/shares/{targetId}',
    summary: 'Take the access away from mailbox `targetId`',
    tag,
    access,
    response: Success,
    async handle({ app, principal, params }) {
      await removeShare(app, principal, params.id!, params.targetId!);
      return { success: true };
    },
  }),

  // ---- filters ----
  defineRoute({
    method: 'GET',
    path: '/mailboxes/{id}/filters',
    summary: "The mailbox's filter rules in position order",
    tag,
    access,
    response: z.object({ rules: z.array(FilterRule) }),
    async handle({ app, principal, params }) {
      return { rules: await getFilters(app, principal, params.id!) };
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/mailboxes/{id}/filters',
    summary: 'Replace the filter rules (applied at delivery in this order); answers the stored rules',
    tag,
    access,
    body: PutFilters,
    response: z.object({ rules: z.array(FilterRule) }),
    async handle({ app, principal, params, body }) {
      return { rules: await putFilters(app, principal, params.id!, body.rules as StoreFilterRule[]) };
    },
  }),
];
