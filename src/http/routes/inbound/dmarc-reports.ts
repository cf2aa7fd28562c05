// DMARC aggregate reports received for a domain, with the spec's own paging (`page`, `perPage`, clamped).
import { defineRoute } from '../../route.js';
import { DmarcReportList } from '../../schemas/inbound/inbound.js';
import { dmarcPaging, listDmarcReports } from '../../../services/inbound/index.js';

export const dmarcReportRoutes = [
  defineRoute({
    method: 'GET',
    path: '/domains/{id}/dmarc/reports',
    summary: 'DMARC aggregate reports received at the rua address the domain publishes, newest first; `page`, `perPage` (default 20, max 100, clamped; `per_page` is ignored)',
    tag: 'Domains',
    access: 'full_access',
    response: DmarcReportList,
    async handle({ app, principal, params, rawQuery }) {
      return listDmarcReports(app, principal.teamId, params.id!, dmarcPaging(rawQuery));
    },
  }),
];
