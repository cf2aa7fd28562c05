// Every MCP tool, in one list (the order clients see). A new area adds a file beside these, exporting its
// defineTool(...) declarations, and one line here.
import type { Tool } from '../tool.js';
import { audienceTools } from './audience.js';
import { campaignTools } from './campaigns.js';
import { domainTools } from './domains.js';
import { emailTools } from './emails.js';
import { inboundTools } from './inbound.js';
import { templateTools } from './templates.js';
import { usageTools } from './usage.js';
import { webhookTools } from './webhooks.js';

export const allTools: readonly Tool[] = [
  ...emailTools,
  ...domainTools,
  ...inboundTools,
  ...webhookTools,
  ...usageTools,
  ...audienceTools,
  ...templateTools,
  ...campaignTools,
];
