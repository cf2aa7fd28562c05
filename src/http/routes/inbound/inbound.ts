// Inbound emails (webhook-routed mail) and the answers to them: reply, forward, draft-reply.
import { z } from 'zod';
import { idempotencyKeyOf } from '../../idempotency.js';
import { defineRoute } from '../../route.js';
import { paged } from '../../schemas/common.js';
import { DraftReply, Forward, InboundAttachments, InboundEmail, InboundListItem, InboundListQuery, Reply, ReplyToSend } from '../../schemas/inbound/inbound.js';
import { parsePaging } from '../../../core/paging.js';
import { notFound } from '../../../core/errors.js';
import { senderOf as sender } from '../../../services/sending/index.js';
import { getInbound, getInboundAttachments, listInbound, draftReply, forwardInbound, replyToInbound } from '../../../services/inbound/index.js';

const Accepted = z.object({ id: z.string().describe('em_… id of the email sent') });

/** `{id}` of an inbound email: a positive integer, anything else is simply not found. */
function inboundId(raw: string | undefined): number {
  if (!raw || !/^\d{1,15}$/.test(raw)) throw notFound('Inbound email not found');
  return Number(raw);
}

export const inboundRoutes = [
  defineRoute({
    method: 'GET',
    path: '/inbound',
    summary: 'Inbound emails routed to webhooks, newest first; `domain` filters by domain name (an unknown name gives an empty page)',
    tag: 'Inbound',
    access: 'full_access',
    query: InboundListQuery,
    paged: true,
    response: paged(InboundListItem),
    async handle({ app, principal, query, rawQuery }) {
      return listInbound(app, principal.teamId, { domain: query.domain }, parsePaging(rawQuery));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/inbound/{id}',
    summary: 'An inbound email: addresses, subject, text, html, headers, authentication results, attachment metadata',
    tag: 'Inbound',
    access: 'full_access',
    response: InboundEmail,
    async handle({ app, principal, params }) {
      return getInbound(app, principal.teamId, inboundId(params.id));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/inbound/{id}/attachments',
    summary: "An inbound email's attachments with their content (base64)",
    tag: 'Inbound',
    access: 'full_access',
    response: InboundAttachments,
    async handle({ app, principal, params }) {
      return { attachments: await getInboundAttachments(app, principal.teamId, inboundId(params.id)) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/inbound/{id}/reply',
    summary: 'Reply through the send path (In-Reply-To, References, the original quoted); answers 202 with the email id',
    tag: 'Inbound',
    access: 'full_access',
    body: ReplyToSend,
    status: 202,
    response: Accepted,
    async handle({ app, principal, params, body, koa }) {
      const key = idempotencyKeyOf(koa, body.idempotency_key);
      return replyToInbound(app, sender(principal), inboundId(params.id), { ...body, idempotency_key: key });
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/inbound/{id}/forward',
    summary: 'Forward through the send path, with the original and its attachments; answers 202 with the email id',
    tag: 'Inbound',
    access: 'full_access',
    body: Forward,
    status: 202,
    response: Accepted,
    async handle({ app, principal, params, body, koa }) {
      const key = idempotencyKeyOf(koa, body.idempotency_key);
      return forwardInbound(app, sender(principal), inboundId(params.id), { ...body, idempotency_key: key });
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/inbound/{id}/draft-reply',
    summary: "Build a reply without sending it: stored in the receiving mailbox's Drafts folder when a mailbox got the original, else returned",
    tag: 'Inbound',
    access: 'full_access',
    body: Reply,
    response: DraftReply,
    async handle({ app, principal, params, body }) {
      return draftReply(app, app.mailstore, principal.teamId, inboundId(params.id), body);
    },
  }),
];
