// Every HTTP route of the appliance, in one list: the router and the OpenAPI document are built from it.
import { defineRoute, type Route } from '../route.js';
import { buildOpenApi } from '../openapi.js';
import { apiKeyRoutes } from './platform/api-keys.js';
import { autoconfigRoutes } from './mailboxes/autoconfig.js';
import { domainRoutes } from './platform/domains.js';
import { emailRoutes } from './sending/emails.js';
import { emailValidationRoutes } from './automation/email-validations.js';
import { workflowRoutes } from './automation/workflows.js';
import { signupFormRoutes } from './automation/signup-forms.js';
import { eventRoutes } from './platform/events.js';
import { healthRoutes } from './platform/health.js';
import { metricsRoutes } from './platform/metrics.js';
import { inboundRoutes } from './inbound/inbound.js';
import { dmarcReportRoutes } from './inbound/dmarc-reports.js';
import { mailboxRoutes } from './mailboxes/mailboxes.js';
import { usageRoutes } from './sending/usage.js';
import { trackingRoutes } from './sending/tracking.js';
import { webhookRoutes } from './notifications/webhooks.js';
import { channelRoutes } from './notifications/channels.js';
import { contactRoutes } from './audience/contacts.js';
import { propertyRoutes, segmentRoutes } from './audience/segments.js';
import { templateRoutes } from './templates/templates.js';
import { suppressionRoutes } from './audience/suppressions.js';
import { topicRoutes } from './audience/topics.js';
import { unsubscribeRoutes } from './audience/unsubscribe.js';
import { mcpRoutes } from '../../mcp/endpoint.js';
import { broadcastRoutes } from './campaigns/broadcasts.js';
import { oauthRoutes } from './platform/oauth.js';

const documented: Route[] = [...healthRoutes, ...metricsRoutes, ...emailRoutes, ...apiKeyRoutes, ...domainRoutes, ...eventRoutes, ...webhookRoutes, ...usageRoutes, ...inboundRoutes, ...dmarcReportRoutes];
// Mailboxes API (issue 5); aliases are declared before /mailboxes/{id} inside the list.
documented.push(...mailboxRoutes);
// The audience: contacts, contact properties, segments.
documented.push(...contactRoutes, ...propertyRoutes, ...segmentRoutes);
// Templates.
documented.push(...templateRoutes);
// Subscription topics, suppressions, and the public pages of an email's unsubscribe links.
documented.push(...topicRoutes, ...suppressionRoutes, ...unsubscribeRoutes);
// Broadcasts (issue 30).
documented.push(...broadcastRoutes);
// Client autoconfiguration (issue 6): Thunderbird autoconfig and Autodiscover, no credential.
documented.push(...autoconfigRoutes);
// Email validation (issue 31, part 1).
documented.push(...emailValidationRoutes);
// Workflows (issue 31, parts 3-4).
documented.push(...workflowRoutes);
// Signup forms with double opt-in (issue 31, part 2): management, the public submit, hosted and confirmation pages.
documented.push(...signupFormRoutes);
// The MCP endpoint (issue 33, part 2): src/mcp/ behind one route.
documented.push(...mcpRoutes);
// Open and click tracking (issue 30, part 1): the pixel and the tracked links, no credential.
documented.push(...trackingRoutes);
// Notification channels and alerts (issue 32, part 4).
documented.push(...channelRoutes);
// The OAuth 2.0 authorization server and its discovery documents (issue 33; 404 unless MAIL_OAUTH_ENABLED).
documented.push(...oauthRoutes);

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
