import { z } from 'zod';
import { REGIONS, TLS_MODES, INBOUND_MODES } from '../../../services/platform/index.js';
import { boolean } from '../common.js';

const region = z.enum(REGIONS, { error: `must be ${REGIONS.join(', ')} (the only region)` });
const tlsMode = z.enum(TLS_MODES, { error: `must be one of ${TLS_MODES.join(', ')}` });

export const CreateDomain = z
  .object({
    // The real length rule (253 octets in ASCII form) is applied after normalisation; this only bounds input.
    name: z.string({ error: 'must be a string' }).min(1, 'must be a valid domain name').max(1024, 'must be a valid domain name'),
    region: region.default('eu-west-1'),
    open_tracking: boolean().default(false),
    click_tracking: boolean().default(false),
    tls_mode: tlsMode.optional().describe('opportunistic (default) or enforced'),
    /** Resend's name for tls_mode (its SDKs send `tls`); tls_mode wins when both are given. */
    tls: tlsMode.optional().describe("Resend's name for tls_mode, accepted for its SDKs; tls_mode wins"),
  })
  .transform(({ tls, tls_mode, ...rest }) => ({ ...rest, tls_mode: tls_mode ?? tls ?? 'opportunistic' }))
  .meta({ id: 'CreateDomain' });

export const UpdateDomain = z
  .object({
    open_tracking: boolean().optional(),
    click_tracking: boolean().optional(),
    tls_mode: tlsMode.optional(),
    tls: tlsMode.optional().describe("Resend's name for tls_mode, accepted for its SDKs; tls_mode wins"),
    inbound_mode: z.enum(INBOUND_MODES, { error: `must be one of ${INBOUND_MODES.join(', ')}` }).optional(),
  })
  .transform(({ tls, tls_mode, ...rest }) => ({ ...rest, tls_mode: tls_mode ?? tls }))
  .refine((v) => v.open_tracking !== undefined || v.click_tracking !== undefined || v.tls_mode !== undefined || v.inbound_mode !== undefined, {
    message: 'Request body must contain at least one of: open_tracking, click_tracking, tls_mode, inbound_mode',
  })
  .meta({ id: 'UpdateDomain' });

export const DnsRecord = z
  .object({
    record: z.enum(['SPF', 'DKIM', 'DMARC', 'MX', 'SRV']),
    type: z.enum(['TXT', 'MX', 'CNAME', 'SRV']),
    name: z.string(),
    value: z.string(),
    priority: z.number().int().optional(),
    ttl: z.literal('Auto'),
    required: z.boolean(),
    status: z.enum(['pending', 'verified', 'failed']),
    reason: z.string().optional(),
    zone_file_line: z
      .string()
      .describe(
        'the record as one zone-file line (BIND, NSD, Knot): absolute name with its trailing dot, a TXT value split into quoted strings of at most 255 characters, as a DKIM key needs',
      ),
  })
  .meta({ id: 'DnsRecord' });

export const Domain = z
  .object({
    id: z.string(),
    name: z.string(),
    status: z.enum(['pending', 'verified', 'failed']),
    region: region,
    open_tracking: z.boolean(),
    click_tracking: z.boolean(),
    tls_mode: tlsMode,
    inbound_mode: z.enum(INBOUND_MODES),
    dns_records: z.array(DnsRecord),
    created_at: z.iso.datetime(),
    verified_at: z.iso.datetime().nullable(),
    last_checked_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'Domain' });
