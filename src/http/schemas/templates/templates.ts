import { z } from 'zod';
import { name, PageMeta, queryBoolean } from '../common.js';
import { BUILDER_TYPES } from '../../../services/templates/index.js';

const variableName = z.string({ error: 'must be a string' }).regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'must be a variable name (letters, digits, _)');
const body = (field: string) => z.string({ error: 'must be a string' }).max(2_000_000, `${field} must be at most 2,000,000 characters`);

export const CreateTemplate = z
  .object({
    name: name(200),
    subject: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(998, 'must be at most 998 characters'),
    html: body('html').optional().describe('required unless builder_type is visual (then compiled from builder_blocks)'),
    text: body('text').nullable().optional().describe('derived from the html when absent'),
    variables: z.array(variableName, { error: 'must be an array of variable names' }).max(100, 'must have at most 100 entries').optional().describe('variables every send must give'),
    builder_type: z.enum(BUILDER_TYPES, { error: 'must be html or visual' }).optional(),
    builder_blocks: z.array(z.unknown(), { error: 'must be an array of blocks' }).max(500, 'must have at most 500 entries').optional(),
  })
  .meta({ id: 'CreateTemplate' });

export const UpdateTemplate = z
  .object({
    name: name(200).optional(),
    subject: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(998, 'must be at most 998 characters').optional(),
    html: body('html').optional(),
    text: body('text').nullable().optional(),
    variables: z.array(variableName, { error: 'must be an array of variable names' }).max(100, 'must have at most 100 entries').optional(),
    builder_type: z.enum(BUILDER_TYPES, { error: 'must be html or visual' }).optional(),
    builder_blocks: z.array(z.unknown(), { error: 'must be an array of blocks' }).max(500, 'must have at most 500 entries').optional(),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { message: 'Request body must contain at least one field to change' })
  .meta({ id: 'UpdateTemplate' });

const content = {
  name: z.string(),
  subject: z.string(),
  html: z.string(),
  text: z.string().nullable(),
  variables: z.array(z.string()),
  builder_type: z.enum(BUILDER_TYPES),
  builder_blocks: z.array(z.unknown()).nullable(),
};

export const Template = z
  .object({
    id: z.string(),
    ...content,
    version: z.number().int().describe('the latest version'),
    published: z.boolean(),
    published_version: z.number().int().nullable().describe('the version sends use; null for a draft'),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Template' });

export const TemplateVersion = z
  .object({ version: z.number().int(), ...content, published: z.boolean(), created_at: z.iso.datetime() })
  .meta({ id: 'TemplateVersion' });

export const TemplateListQuery = z.object({ search: z.string().max(200, 'must be at most 200 characters').optional(), published: queryBoolean().optional() });

export const TemplateList = z.object({
  data: z.array(Template),
  meta: PageMeta,
  counts: z.object({ published: z.number().int(), draft: z.number().int() }).describe("the whole team's templates"),
});

const variableValue = z.union([z.string(), z.number(), z.boolean()], { error: 'must be a string, number or boolean' });
export const RenderTemplate = z
  .object({
    variables: z.record(z.string(), z.union([variableValue, z.record(z.string(), variableValue)], { error: 'must be a value or an object of values' }), { error: 'must be an object of variable values' }).optional(),
    version: z.number({ error: 'must be a version number' }).int('must be a version number').min(1, 'must be a version number').optional().describe('the latest unless given'),
  })
  .meta({ id: 'RenderTemplate' });

export const Rendered = z
  .object({
    version: z.number().int(),
    subject: z.string(),
    html: z.string(),
    text: z.string().nullable(),
    missing_variables: z.array(z.string()).describe('paths the template reads that were not given (rendered empty, or with their default)'),
  })
  .meta({ id: 'RenderedTemplate' });
