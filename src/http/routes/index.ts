// Every HTTP route of the appliance, in one list: the router and the OpenAPI document are built from it.
import { defineRoute, type Route } from '../route.js';
import { buildOpenApi } from '../openapi.js';
import { apiKeyRoutes } from './api-keys.js';
import { autoconfigRoutes } from './autoconfig.js';
import { domainRoutes } from './domains.js';
import { emailRoutes } from './emails.js';
import { eventRoutes } from './events.js';
import { healthRoutes } from './health.js';
import { inboundRoutes } from './inbound.js';
import { dmarcReportRoutes } from './dmarc-reports.js';
import { mailboxRoutes } from './mailboxes.js';
import { usageRoutes } from './usage.js';
import { webhookRoutes } from './webhooks.js';

const documented: Route[] = [...healthRoutes, ...emailRoutes, ...apiKeyRoutes, ...domainRoutes, ...eventRoutes, ...webhookRoutes, ...usageRoutes, ...inboundRoutes, ...dmarcReportRoutes];
// Mailboxes API (issue 5); aliases are declared before /mailboxes/{id} inside the list.
documented.push(...mailboxRoutes);
// Client autoconfiguration (issue 6): Thunderbird autoconfig and Autodiscover, no credential.
documented.push(...autoconfigRoutes);

const openApiRoute = defineRoute({
  method: 'GET',
  path: '/openapi.json',
  summary: 'This document (no credential)',
  tag: 'System',
  access: 'public',
  async handle({ app }) {
    return buildOpenApi(allRoutes, app.version);
  },
});

export const allRoutes: Route[] = [...documented, openApiRoute];
