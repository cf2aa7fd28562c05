import { Readable } from 'node:stream';
import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { paged, Success } from '../../schemas/common.js';
import { CreateSuppression, ImportSuppressions, Suppression, SuppressionImportResult } from '../../schemas/audience/suppressions.js';
import { parsePaging } from '../../../core/paging.js';
import { createSuppression, deleteSuppression, exportSuppressions, importSuppressions, listSuppressions } from '../../../services/audience/index.js';

const tag = 'Suppressions';

export const suppressionRoutes = [
  defineRoute({
    method: 'GET',
    path: '/suppressions',
    summary: 'The addresses the box will not send to, newest first (Form A): each with its reason, the email whose bounce or complaint put it there, and when',
    tag,
    access: 'full_access',
    paged: true,
    response: paged(Suppression),
    async handle({ app, principal, rawQuery }) {
      return listSuppressions(app, principal.teamId, parsePaging(rawQuery));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/suppressions',
    summary: 'Put an address on the list (`reason`: bounce, complaint or manual); 409 when it is there already',
    tag,
    access: 'full_access',
    body: CreateSuppression,
    status: 201,
    response: z.object({ success: z.literal(true), suppression: Suppression }),
    async handle({ app, principal, body }) {
      return { success: true as const, suppression: await createSuppression(app, principal.teamId, body) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/suppressions/export',
    summary: 'The whole list as CSV (text/csv), oldest first: email, reason, details, email_id, created_at',
    tag,
    access: 'full_access',
    async handle({ app, principal, koa }) {
      koa.type = 'text/csv; charset=utf-8';
      koa.set('Content-Disposition', 'attachment; filename="suppressions.csv"');
      koa.body = Readable.from(exportSuppressions(app, principal.teamId));
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/suppressions/import',
    summary:
      'Add addresses from CSV text: a header row with `email`, and `reason` (bounce, complaint, manual) per row or a default `reason` in the body; `details` optional. At most 10,000 rows, one transaction; addresses on the list already are skipped, bad rows reported by line and left out',
    tag,
    access: 'full_access',
    body: ImportSuppressions,
    response: SuppressionImportResult,
    async handle({ app, principal, body }) {
      return { success: true, ...(await importSuppressions(app, principal.teamId, body)) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/suppressions/{email}',
    summary: 'Take an address off the list (URL-encoded): the box may send to it again',
    tag,
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteSuppression(app, principal.teamId, params.email!);
      return { success: true };
    },
  }),
];
