// The suppression list (spec: Suppressions; Suppression input shape).
import { z } from 'zod';
import { emailAddress } from '../../../core/validation.js';
import { SUPPRESSION_REASONS } from '../../../services/audience/index.js';

const reason = z.enum(SUPPRESSION_REASONS, { error: `must be one of ${SUPPRESSION_REASONS.join(', ')}` });

export const CreateSuppression = z.object({ email: emailAddress(), reason }).meta({ id: 'CreateSuppression' });

export const Suppression = z
  .object({
    email: z.string(),
    reason: z.string().describe('bounce, complaint or manual'),
    details: z.string().nullable().describe('the remote server’s reply or the report, for an automatic entry'),
    email_id: z.string().nullable().describe('the email whose bounce or complaint put the address here'),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'Suppression' });

export const ImportSuppressions = z
  .object({
    csv: z.string({ error: 'must be a string (the CSV text)' }).min(1, 'must not be empty'),
    reason: reason.optional().describe('for rows without a reason cell (or a file without a reason column)'),
  })
  .meta({ id: 'ImportSuppressions' });

export const SuppressionImportResult = z
  .object({
    success: z.literal(true),
    created: z.number().int(),
    skipped: z.number().int().describe('addresses on the list already (kept as they are)'),
    failed: z.number().int(),
    errors: z.array(z.object({ line: z.number().int(), email: z.string().nullable(), error: z.string() })).describe('the first 100 rows left out, each with its line and why'),
    ignored_columns: z.array(z.string()),
  })
  .meta({ id: 'ImportSuppressionsResult' });
