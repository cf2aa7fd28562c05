import { z } from 'zod';
import { boolean, name, queryBoolean } from '../common.js';
import { emailAddress } from '../../../core/validation.js';
import { ENGAGEMENT_SEGMENTS, MATCHES, OPERATORS, OPT_IN_STATUSES, PROPERTY_TYPES, type RuleGroup } from '../../../services/audience/index.js';

const personName = z.string({ error: 'must be a string or null' }).trim().max(200, 'must be at most 200 characters').nullable();
const properties = z.record(z.string(), z.unknown(), { error: 'must be an object' });

export const CreateContact = z
  .object({
    email: emailAddress(),
    first_name: personName.optional(),
    last_name: personName.optional(),
    unsubscribed: boolean().default(false),
    properties: properties.optional(),
  })
  .meta({ id: 'CreateContact' });

export const UpdateContact = z
  .object({
    first_name: personName.optional(),
    last_name: personName.optional(),
    unsubscribed: boolean().optional(),
    properties: properties.optional().describe('merged into the contact’s; a key set to null is removed'),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { message: 'Request body must contain at least one of: first_name, last_name, unsubscribed, properties' })
  .meta({ id: 'UpdateContact' });


export const ContactListQuery = z.object({
  search: z.string().max(200, 'must be at most 200 characters').optional(),
  segment_id: z.string().optional(),
  unsubscribed: queryBoolean().optional(),
  engagement_segment: z.enum(ENGAGEMENT_SEGMENTS, { error: `must be one of ${ENGAGEMENT_SEGMENTS.join(', ')}` }).optional(),
});

export const Contact = z
  .object({
    id: z.string(),
    email: z.string(),
    first_name: z.string().nullable(),
    last_name: z.string().nullable(),
    unsubscribed: z.boolean(),
    properties: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
    opt_in_status: z
      .enum(OPT_IN_STATUSES)
      .describe('double opt-in: none (nothing to confirm), pending (signed up through a double opt-in form, not confirmed: receives no marketing mail), confirmed'),
    confirmed_at: z.iso.datetime().nullable().describe('when the contact confirmed its address, else null'),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'Contact' });

export const ImportContacts = z
  .object({
    csv: z.string({ error: 'must be a string (the CSV text)' }).min(1, 'must not be empty'),
    segment_id: z.string({ error: 'must be a string' }).optional(),
  })
  .meta({ id: 'ImportContacts' });

export const ImportResult = z
  .object({
    success: z.literal(true),
    created: z.number().int(),
    updated: z.number().int(),
    skipped: z.number().int().describe('rows of existing contacts that would change nothing'),
    failed: z.number().int().describe('rows left out'),
    errors: z.array(z.object({ line: z.number().int(), email: z.string().nullable(), error: z.string() })).describe('the first 100 rows left out, each with its line and why'),
    ignored_columns: z.array(z.string()).describe('header columns that name neither a contact field nor a defined property'),
  })
  .meta({ id: 'ImportContactsResult' });

// Contact properties.
const propertyType = z.enum(PROPERTY_TYPES, { error: `must be one of ${PROPERTY_TYPES.join(', ')}` });
export const CreateProperty = z.object({ name: name(50), type: propertyType }).meta({ id: 'CreateContactProperty' });
export const UpdateProperty = z
  .object({ name: name(50).optional(), type: propertyType.optional() })
  .refine((v) => v.name !== undefined || v.type !== undefined, { message: 'Request body must contain at least one of: name, type' })
  .meta({ id: 'UpdateContactProperty' });
export const ContactProperty = z
  .object({ id: z.string(), name: z.string(), type: propertyType, created_at: z.iso.datetime() })
  .meta({ id: 'ContactProperty' });

// Segments.
const condition = z.object({
  field: z.string({ error: 'must be a string' }).min(1, 'must not be empty').describe('email, first_name, last_name, unsubscribed, created_at, properties.<name>, topic or engagement'),
  operator: z.enum(OPERATORS, { error: `must be one of ${OPERATORS.join(', ')}` }),
  value: z.unknown().optional(),
});
export const Rules: z.ZodType<RuleGroup> = z.lazy(() =>
  z.object({
    match: z.enum(MATCHES, { error: 'must be all or any' }),
    conditions: z.array(z.union([Rules, condition]), { error: 'must be an array of conditions' }).min(1, 'must hold at least one condition').max(50, 'must have at most 50 entries'),
  }),
).meta({ id: 'SegmentRules' }) as z.ZodType<RuleGroup>;

export const CreateSegment = z.object({ name: name(200), rules: Rules.optional().describe('makes the segment dynamic') }).meta({ id: 'CreateSegment' });
export const UpdateSegment = z
  .object({ name: name(200).optional(), rules: Rules.optional() })
  .refine((v) => v.name !== undefined || v.rules !== undefined, { message: 'Request body must contain at least one of: name, rules' })
  .meta({ id: 'UpdateSegment' });
export const SegmentContacts = z
  .object({
    contact_ids: z
      .array(z.string({ error: 'must be an array of contact ids' }), { error: 'must be an array of contact ids' })
      .min(1, 'must name at least one contact')
      .max(1000, 'must have at most 1000 entries'),
  })
  .meta({ id: 'SegmentContacts' });
export const PreviewSegment = z.object({ rules: Rules }).meta({ id: 'PreviewSegment' });
export const Segment = z
  .object({
    id: z.string(),
    name: z.string(),
    type: z.enum(['manual', 'dynamic']),
    rules: z.unknown().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Segment' });
