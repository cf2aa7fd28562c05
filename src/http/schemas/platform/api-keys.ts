import { z } from 'zod';
import { KEY_MODES, PERMISSIONS } from '../../../services/platform/index.js';
import { name } from '../common.js';

export const CreateApiKey = z
  .object({
    name: name(),
    permission: z.enum(PERMISSIONS, { error: `must be one of ${PERMISSIONS.join(', ')}` }),
    mode: z.enum(KEY_MODES, { error: `must be one of ${KEY_MODES.join(', ')}` }).default('live'),
  })
  .meta({ id: 'CreateApiKey' });

export const ApiKey = z
  .object({
    id: z.string(),
    name: z.string(),
    permission: z.enum(PERMISSIONS),
    mode: z.enum(KEY_MODES),
    token_hint: z.string().describe('first and last characters of the value, to tell keys apart'),
    created_at: z.iso.datetime(),
    rotated_at: z.iso.datetime().nullable(),
    last_used_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'ApiKey' });

export const IssuedApiKey = ApiKey.extend({
  success: z.literal(true),
  token: z.string().describe('the key value (sk_live_… or sk_test_…), shown once'),
}).meta({ id: 'IssuedApiKey' });
