// Signup forms (spec: /signup-forms and the public submit; the record's shape and the bodies beyond `email` and
// `properties` are ours, see docs/API.md).
import { z } from 'zod';
import { emailAddress } from '../../../core/validation.js';
import { MAX_FORM_FIELDS } from '../../../services/automation/index.js';
import { boolean, name } from '../common.js';

const Field = z.object({
  property: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(100).describe('first_name, last_name or a custom contact property; also the input name'),
  label: name(200),
  required: boolean().default(false),
});

const Origin = z
  .string({ error: 'must be a string' })
  .refine((s) => s === '*' || /^https?:\/\/[^/\s]+$/.test(s), { message: 'must be an origin (scheme://host[:port], no path) or *' })
  .transform((s) => (s === '*' ? s : new URL(s).origin));

const DoubleOptIn = z
  .object({
    from: z.string({ error: 'must be a string' }).min(3).max(320).describe('sender on a verified domain of the team'),
    subject: z.string({ error: 'must be a string' }).min(1).max(998).optional(),
    html: z.string({ error: 'must be a string' }).min(1).max(200_000).optional().describe('must contain {{ confirm_url }}; {{ email }} too if wanted'),
    template_id: z.string({ error: 'must be a string' }).max(100).optional().describe('a published template rendered with the variables confirm_url, email, form_name'),
  })
  .nullable()
  .describe('null: no confirmation (signups join at once)');

const fields = {
  name: name(200),
  fields: z.array(Field, { error: 'must be an array' }).max(MAX_FORM_FIELDS, `must hold at most ${MAX_FORM_FIELDS} fields`),
  segment_id: z.string({ error: 'must be a string' }).max(100).nullable().describe('a manual segment the signup joins'),
  topic_ids: z.array(z.string().max(100), { error: 'must be an array' }).max(100).describe('topics the signup subscribes to'),
  double_opt_in: DoubleOptIn,
  success_message: z.string({ error: 'must be a string' }).max(2000).nullable(),
  redirect_url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2000).nullable().describe('a plain form post is answered 303 to it instead of the success page'),
  allowed_origins: z.array(Origin, { error: 'must be an array' }).max(50).describe('origins whose pages may post (CORS); the box’s own always may; * for any'),
};

export const CreateSignupForm = z
  .object({ ...fields, fields: fields.fields.optional(), segment_id: fields.segment_id.optional(), topic_ids: fields.topic_ids.optional(), double_opt_in: fields.double_opt_in.optional(), success_message: fields.success_message.optional(), redirect_url: fields.redirect_url.optional(), allowed_origins: fields.allowed_origins.optional() })
  .meta({ id: 'CreateSignupForm' });

export const UpdateSignupForm = z
  .object(Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v.optional()])) as { [K in keyof typeof fields]: z.ZodOptional<(typeof fields)[K]> })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { message: `Request body must contain at least one of: ${Object.keys(fields).join(', ')}` })
  .meta({ id: 'UpdateSignupForm' });

export const SignupForm = z
  .object({
    id: z.string().describe('sf_…'),
    name: z.string(),
    fields: z.array(z.object({ property: z.string(), label: z.string(), required: z.boolean() })),
    segment_id: z.string().nullable(),
    topic_ids: z.array(z.string()),
    double_opt_in: z.object({ from: z.string(), subject: z.string().optional(), html: z.string().optional(), template_id: z.string().optional() }).nullable(),
    success_message: z.string().nullable(),
    redirect_url: z.string().nullable(),
    allowed_origins: z.array(z.string()),
    hosted_url: z.string().describe('the hosted page'),
    submit_url: z.string(),
    embed_html: z.string().describe('a plain <form> to paste into a page'),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'SignupForm' });

export const SubmitSignup = z
  .object({
    email: emailAddress(),
    properties: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]), { error: 'must be an object' }).optional(),
    website_url: z.string().optional().describe('the honeypot: leave empty (filled: answered like a success, nothing stored)'),
  })
  .meta({ id: 'SubmitSignup' });
