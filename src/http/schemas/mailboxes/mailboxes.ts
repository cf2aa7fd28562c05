import { z } from 'zod';
import { emailAddress } from '../../../core/validation.js';
import { PageMeta } from '../common.js';

const password = z
  .string({ error: 'must be a string of 8 to 1024 characters' })
  .min(8, 'must be at least 8 characters')
  .max(1024, 'must be at most 1024 characters');
const displayName = z
  .string({ error: 'must be a string or null' })
  .trim()
  .max(200, 'must be at most 200 characters')
  .refine((v) => !/[\x00-\x1f\x7f]/.test(v), 'must not contain control characters (line breaks included)')
  .nullable();
const quotaBytes = z
  .number({ error: 'must be a whole number of bytes (0 = unlimited)' })
  .int('must be a whole number of bytes (0 = unlimited)')
  .min(0, 'must be 0 (unlimited) or more')
  .max(Number.MAX_SAFE_INTEGER, 'is too large');
const mailboxId = z.number({ error: 'must be a mailbox id' }).int('must be a mailbox id').positive('must be a mailbox id');

export const CreateMailbox = z
  .object({ address: emailAddress(), password, displayName: displayName.optional(), quotaBytes: quotaBytes.optional() })
  .meta({ id: 'CreateMailbox' });

export const UpdateMailbox = z
  .object({ displayName: displayName.optional(), quotaBytes: quotaBytes.optional() })
  .refine((v) => v.displayName !== undefined || v.quotaBytes !== undefined, { message: 'Request body must contain at least one of: displayName, quotaBytes' })
  .meta({ id: 'UpdateMailbox' });

export const SetMailboxPassword = z.object({ password }).meta({ id: 'SetMailboxPassword' });

export const MailboxListQuery = z.object({ domain_id: z.string().optional() });

export const Mailbox = z
  .object({
    id: z.number().int(),
    address: z.string(),
    domainId: z.string(),
    displayName: z.string().nullable(),
    quotaBytes: z.number().int().describe('0 = unlimited'),
    usedBytes: z.number().int(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Mailbox' });

export const MailboxPage = z.object({ data: z.array(Mailbox), meta: PageMeta });

// ---- shares ----

const access = z.enum(['read', 'read-write'], { error: "must be 'read' or 'read-write'" });
export const CreateShare = z.object({ targetMailboxId: mailboxId, access }).meta({ id: 'CreateShare' });
export const Share = z
  .object({ mailboxId: z.number().int(), targetMailboxId: z.number().int(), targetAddress: z.string(), access, createdAt: z.iso.datetime() })
  .meta({ id: 'MailboxShare' });

// ---- filters ----

const text = (what: string) => z.string({ error: `must be ${what}` }).min(1, `must be ${what}`).max(1000, 'must be at most 1000 characters');
const textOp = z.enum(['contains', 'equals', 'matches'], { error: "must be 'contains', 'equals' or 'matches'" });
const folder = z
  .string({ error: 'must be a folder path' })
  .trim()
  .min(1, 'must be a folder path')
  .max(512, 'must be at most 512 characters')
  .refine((p) => !/[\x00-\x1f\x7f]/.test(p) && p.split('/').every((s) => s.length > 0), 'must be a folder path like "Lists/dev"');

const Condition = z.discriminatedUnion(
  'field',
  [
    z.object({ field: z.enum(['from', 'to', 'subject']), op: textOp, value: text('a non-empty string') }),
    z.object({
      field: z.literal('header'),
      name: z.string({ error: 'must be a header name' }).regex(/^[!-9;-~]{1,100}$/, 'must be a header name'),
      op: z.enum(['contains', 'equals', 'matches', 'exists'], { error: "must be 'contains', 'equals', 'matches' or 'exists'" }),
      value: text('a non-empty string').optional(),
    }),
    z.object({ field: z.literal('size'), op: z.enum(['gt', 'lt'], { error: "must be 'gt' or 'lt'" }), value: z.number({ error: 'must be a number of bytes' }).int().min(0) }),
  ],
  { error: "must have a field of 'from', 'to', 'subject', 'header' or 'size'" },
);

const Action = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('move'), folder }),
    z.object({ type: z.literal('mark_read') }),
    z.object({ type: z.literal('flag') }),
    z.object({ type: z.literal('forward'), to: emailAddress() }),
    z.object({ type: z.literal('discard') }),
  ],
  { error: "must have a type of 'move', 'mark_read', 'flag', 'forward' or 'discard'" },
);

export const FilterRule = z
  .object({
    conditions: z.array(Condition, { error: 'must be an array of conditions' }).max(20, 'must have at most 20 conditions'),
    actions: z.array(Action, { error: 'must be an array of actions' }).min(1, 'must have at least one action').max(10, 'must have at most 10 actions'),
    stop: z.boolean({ error: 'must be a boolean' }).optional(),
  })
  .refine((r) => r.conditions.every((c) => c.field !== 'header' || c.op === 'exists' || c.value !== undefined), {
    message: "a header condition needs a value unless its op is 'exists'",
  })
  .meta({ id: 'FilterRule' });

export const PutFilters = z.object({ rules: z.array(FilterRule, { error: 'must be an array of rules' }).max(100, 'must have at most 100 rules') }).meta({ id: 'MailboxFilters' });

// ---- aliases ----

export const CreateAlias = z
  .object({
    address: z
      .string({ error: 'must be an email address or *@domain' })
      .trim()
      .min(3, 'must be an email address or *@domain')
      .max(320, 'must be at most 320 characters'),
    mailboxIds: z.array(mailboxId, { error: 'must be an array of mailbox ids' }).min(1, 'must name at least one mailbox').max(100, 'must name at most 100 mailboxes'),
  })
  .meta({ id: 'CreateAlias' });

export const Alias = z
  .object({ id: z.number().int(), address: z.string().describe('`*@domain` for the catch-all'), domainId: z.string(), mailboxIds: z.array(z.number().int()), createdAt: z.iso.datetime() })
  .meta({ id: 'MailboxAlias' });

export const AliasPage = z.object({ data: z.array(Alias), meta: PageMeta });
