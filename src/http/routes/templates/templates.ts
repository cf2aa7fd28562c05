import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { paged, Success } from '../../schemas/common.js';
import { CreateTemplate, Rendered, RenderTemplate, Template, TemplateList, TemplateListQuery, TemplateVersion, UpdateTemplate } from '../../schemas/templates/templates.js';
import { badRequest } from '../../../core/errors.js';
import { parsePaging } from '../../../core/paging.js';
import {
  createTemplate,
  deleteTemplate,
  duplicateTemplate,
  getTemplate,
  getVersion,
  listTemplates,
  listPresets,
  listVersions,
  renderTemplate,
  restoreVersion,
  setPublished,
  updateTemplate,
  useTemplatePreset,
} from '../../../services/templates/index.js';

const tag = 'Templates';
const withTemplate = z.object({ success: z.literal(true), template: Template });

function versionParam(raw: string | undefined): number {
  if (!raw || !/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw badRequest(`Invalid version '${(raw ?? '').slice(0, 20)}': must be a positive integer`);
  return Number(raw);
}

const Preset = z
  .object({ id: z.string(), name: z.string(), description: z.string(), subject: z.string(), variables: z.array(z.string()), blocks: z.array(z.unknown()) })
  .meta({ id: 'TemplatePreset' });

export const templateRoutes = [
  defineRoute({
    method: 'GET',
    path: '/templates/presets',
    summary: 'The presets a template can start from (welcome, password reset, receipt, newsletter, announcement), in a fixed order, each as visual-builder blocks',
    tag,
    access: 'full_access',
    // The spec's shape is `{ data }`; `presets` (the same list) stays for the clients written against it.
    response: z.object({ data: z.array(Preset), presets: z.array(Preset) }),
    async handle() {
      const presets = listPresets();
      return { data: presets, presets };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/templates/presets/{presetId}/use',
    summary: 'Create a draft visual template from a preset (`name` optional: the preset’s by default)',
    tag,
    access: 'full_access',
    body: z.object({ name: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters').optional() }).meta({ id: 'UseTemplatePreset' }),
    status: 201,
    response: withTemplate,
    async handle({ app, principal, params, body }) {
      return { success: true, template: await useTemplatePreset(app, principal.teamId, params.presetId!, body.name) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/templates',
    summary: 'List templates, most recently updated first (Form A paging); `search` in the name or subject, `published` true or false; `counts` are the whole team’s',
    tag,
    access: 'full_access',
    query: TemplateListQuery,
    paged: true,
    response: TemplateList,
    async handle({ app, principal, query, rawQuery }) {
      return listTemplates(app, principal.teamId, query, parsePaging(rawQuery));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/templates',
    summary:
      'Create a template (a draft, version 1). Subject, html and text hold Liquid merge tags: `{{ name }}` (escaped in html), `{{ name | raw }}` or `{{{ name }}}` (not escaped), `{{ name | default: "friend" }}`; a syntax error is a 400 naming the part and line',
    tag,
    access: 'full_access',
    body: CreateTemplate,
    status: 201,
    response: withTemplate,
    async handle({ app, principal, body }) {
      return { success: true, template: await createTemplate(app, principal.teamId, body) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/templates/{id}',
    summary: 'Get a template at its latest version',
    tag,
    access: 'full_access',
    response: z.object({ template: Template }),
    async handle({ app, principal, params }) {
      return { template: await getTemplate(app, principal.teamId, params.id!) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/templates/{id}',
    summary: 'Change a template: every update is a new version. A published template keeps sending its published version until it is published again',
    tag,
    access: 'full_access',
    body: UpdateTemplate,
    response: withTemplate,
    async handle({ app, principal, params, body }) {
      return { success: true, template: await updateTemplate(app, principal.teamId, params.id!, body) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/templates/{id}',
    summary: 'Delete a template and its versions (emails already sent keep their rendering)',
    tag,
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteTemplate(app, principal.teamId, params.id!);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/templates/{id}/duplicate',
    summary: 'Copy a template’s latest version into a new draft template named "<name> (copy)"',
    tag,
    access: 'full_access',
    status: 201,
    response: withTemplate,
    async handle({ app, principal, params }) {
      return { success: true, template: await duplicateTemplate(app, principal.teamId, params.id!) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/templates/{id}/publish',
    summary: 'Publish the latest version: sends by this template use it from now on',
    tag,
    access: 'full_access',
    response: withTemplate,
    async handle({ app, principal, params }) {
      return { success: true, template: await setPublished(app, principal.teamId, params.id!, true) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/templates/{id}/unpublish',
    summary: 'Make the template a draft again: sends by it answer 422 until it is published',
    tag,
    access: 'full_access',
    response: withTemplate,
    async handle({ app, principal, params }) {
      return { success: true, template: await setPublished(app, principal.teamId, params.id!, false) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/templates/{id}/render',
    summary: 'Render a version (the latest unless `version` says) with `variables`: the subject, html and text as they would go out, and the variables that were missing',
    tag,
    access: 'full_access',
    body: RenderTemplate,
    response: Rendered,
    async handle({ app, principal, params, body }) {
      return renderTemplate(app, principal.teamId, params.id!, body.variables ?? {}, body.version);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/templates/{id}/versions',
    summary: 'A template’s versions, newest first (Form A paging; the last 100 are kept, and always the published one)',
    tag,
    access: 'full_access',
    paged: true,
    response: paged(TemplateVersion),
    async handle({ app, principal, params, rawQuery }) {
      return listVersions(app, principal.teamId, params.id!, parsePaging(rawQuery));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/templates/{id}/versions/{version}',
    summary: 'One version of a template',
    tag,
    access: 'full_access',
    response: z.object({ version: TemplateVersion }),
    async handle({ app, principal, params }) {
      return { version: await getVersion(app, principal.teamId, params.id!, versionParam(params.version)) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/templates/{id}/versions/{version}/restore',
    summary: 'Restore a version: its content becomes a new latest version (publishing is unchanged)',
    tag,
    access: 'full_access',
    response: withTemplate,
    async handle({ app, principal, params }) {
      return { success: true, template: await restoreVersion(app, principal.teamId, params.id!, versionParam(params.version)) };
    },
  }),
];
