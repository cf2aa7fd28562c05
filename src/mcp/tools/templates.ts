// Templates: list, get, render — the services behind /templates. Rendering changes nothing.
import { z } from 'zod';
import { RenderTemplate, TemplateListQuery } from '../../http/schemas/templates/templates.js';
import { getTemplate, listTemplates, renderTemplate } from '../../services/templates/index.js';
import { defineTool, idArg, PAGING, pageOf } from '../tool.js';

const templateId = idArg('the template id, as list_templates gave it');

export const templateTools = [
  defineTool({
    name: 'list_templates',
    title: 'List templates',
    description:
      "Email templates, newest first, with their published version (what sends by `template_id` use). `search`: part of a name; `published`: true or false. Paged: `page`, `per_page`; `counts` gives the team's published and draft totals.",
    scope: 'mcp:read',
    input: z.object({
      search: TemplateListQuery.shape.search,
      published: z.boolean({ error: 'must be true or false' }).optional().describe('true: only published templates; false: only drafts'),
      ...PAGING,
    }),
    async handler(ctx, principal, input) {
      return listTemplates(ctx, principal.teamId, { search: input.search, published: input.published }, pageOf(input));
    },
  }),
  defineTool({
    name: 'get_template',
    title: 'Get a template',
    description: 'One template: name, subject, html and text of its latest version, whether it is published and which version sends use.',
    scope: 'mcp:read',
    input: z.object({ id: templateId }),
    async handler(ctx, principal, input) {
      return { template: await getTemplate(ctx, principal.teamId, input.id) };
    },
  }),
  defineTool({
    name: 'render_template',
    title: 'Render a template',
    description:
      'Render a template version (the latest unless `version` says) with `variables` ({ name: value }): the subject, html and text exactly as they would be sent, and the variables the template uses that were not given. Sends nothing; use it to check a template before send_email with `template_id`.',
    scope: 'mcp:read',
    input: z.object({ id: templateId, ...RenderTemplate.shape }),
    async handler(ctx, principal, input) {
      return renderTemplate(ctx, principal.teamId, input.id, input.variables ?? {}, input.version);
    },
  }),
];
