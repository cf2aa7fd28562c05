import { isIP } from 'node:net';
import { z } from 'zod';
import { DKIM_KEY_TYPES, INBOUND_MODES, REGIONS, RETIRE_AFTER_DAYS, TLS_MODES } from '../../../services/platform/index.js';
import { boolean } from '../common.js';

const region = z.enum(REGIONS, { error: `must be ${REGIONS.join(', ')} (the only region)` });
const tlsMode = z.enum(TLS_MODES, { error: `must be one of ${TLS_MODES.join(', ')}` });
const trackingSubdomain = z
  .string({ error: 'must be a string or null' })
  .max(63, 'must be one DNS label (letters, digits and hyphens, e.g. "track"), or null')
  .nullable()
  .describe(
    'the label of the name the open and click URLs use (<label>.<domain>, published as the CNAME listed in dns_records, record TRACKING); null: the box\'s own public URL. Used once its record is verified',
  );
const dkimKeyType = z
  .enum(DKIM_KEY_TYPES, { error: `must be one of ${DKIM_KEY_TYPES.join(', ')}` })
  .describe('rsa: one RSA-2048 key; ed25519: an Ed25519 key (RFC 8463) and an RSA-2048 key beside it, both signing every message');

export const CreateDomain = z
  .object({
    // The real length rule (253 octets in ASCII form) is applied after normalisation; this only bounds input.
    name: z.string({ error: 'must be a string' }).min(1, 'must be a valid domain name').max(1024, 'must be a valid domain name'),
    region: region.default('eu-west-1'),
    open_tracking: boolean().default(false),
    click_tracking: boolean().default(false),
    tracking_subdomain: trackingSubdomain.optional(),
    tls_mode: tlsMode.optional().describe('opportunistic (default) or enforced'),
    /** Resend's name for tls_mode (its SDKs send `tls`); tls_mode wins when both are given. */
    tls: tlsMode.optional().describe("Resend's name for tls_mode, accepted for its SDKs; tls_mode wins"),
    dkim_key_type: dkimKeyType.default('rsa'),
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
    tracking_subdomain: trackingSubdomain.optional(),
  })
  .transform(({ tls, tls_mode, ...rest }) => ({ ...rest, tls_mode: tls_mode ?? tls }))
  .refine(
    (v) => v.open_tracking !== undefined || v.click_tracking !== undefined || v.tls_mode !== undefined || v.inbound_mode !== undefined || v.tracking_subdomain !== undefined,
    { message: 'Request body must contain at least one of: open_tracking, click_tracking, tls_mode, inbound_mode, tracking_subdomain' },
  )
  .meta({ id: 'UpdateDomain' });

export const DnsRecord = z
  .object({
    record: z.enum(['SPF', 'DKIM', 'DMARC', 'MX', 'SRV', 'TRACKING']),
    type: z.enum(['TXT', 'MX', 'CNAME', 'SRV']),
    name: z.string(),
    value: z.string(),
    priority: z.number().int().optional(),
    ttl: z.literal('Auto'),
    required: z.boolean(),
    status: z.enum(['pending', 'verified', 'failed']),
    reason: z.string().optional(),
    dkim: z
      .object({
        selector: z.string(),
        algorithm: z.enum(['rsa', 'ed25519']),
        state: z.enum(['active', 'pending', 'retiring', 'retired']),
        retire_after: z.iso.datetime().nullable(),
      })
      .optional()
      .describe(
        "DKIM records: the key's selector and algorithm, and its state — active (signs; required), pending (a rotation's new key: publish it, then activate), retiring (replaced: keep it published until retire_after), retired (signs nothing: remove the record; it is no longer listed once a verify finds it gone)",
      ),
    zone_file_line: z
      .string()
      .describe(
        'the record as one zone-file line (BIND, NSD, Knot): absolute name with its trailing dot, a TXT value split into quoted strings of at most 255 characters, as a DKIM key needs',
      ),
  })
  .meta({ id: 'DnsRecord' });

const rotationSelectors = z.object({ new: z.array(z.string()), old: z.array(z.string()) });

export const DkimRotationSummary = z
  .object({
    state: z.enum(['pending', 'activated']),
    key_type: dkimKeyType,
    selectors: rotationSelectors,
    started_at: z.iso.datetime(),
    activated_at: z.iso.datetime().nullable(),
    retire_after: z.iso.datetime().nullable(),
  })
  .describe('the DKIM rotation under way: pending (new keys made, waiting for their records and the activation) or activated (new keys sign; the old selectors are retired at retire_after)')
  .meta({ id: 'DkimRotationSummary' });

export const RotateDkim = z
  .object({ dkim_key_type: dkimKeyType.optional().describe("the new keys' type; the domain's current type when omitted") })
  .meta({ id: 'RotateDkim' });

const { min, max } = RETIRE_AFTER_DAYS;
export const ActivateDkimRotation = z
  .object({
    retire_after_days: z
      .number({ error: `must be an integer between ${min} and ${max}` })
      .int(`must be an integer between ${min} and ${max}`)
      .min(min, `must be an integer between ${min} and ${max}`)
      .max(max, `must be an integer between ${min} and ${max}`)
      .default(RETIRE_AFTER_DAYS.default)
      .describe(`days the old selector stays published before it is retired (${min}..${max}, default ${RETIRE_AFTER_DAYS.default})`),
  })
  .meta({ id: 'ActivateDkimRotation' });

export const Domain = z
  .object({
    id: z.string(),
    name: z.string(),
    status: z.enum(['pending', 'verified', 'failed']),
    verification: z.enum(['dns', 'operator']).nullable().meta({ description: 'Who verified the domain: dns (its records were found) or operator (a trusted domain: MAIL_LOCAL_DOMAINS or `admin domains add --trusted`). Null while not verified.' }),
    region: region,
    open_tracking: z.boolean(),
    click_tracking: z.boolean(),
    tracking_subdomain: z.string().nullable(),
    tls_mode: tlsMode,
    inbound_mode: z.enum(INBOUND_MODES),
    dkim_key_type: dkimKeyType,
    dkim_rotation: DkimRotationSummary.nullable(),
    dns_records: z.array(DnsRecord).describe('the records to publish for verification: TXT (SPF, DKIM, DMARC) and MX'),
    mail_client_records: z.array(DnsRecord).describe('RFC 6186 SRV records for mail client autoconfiguration: informational, never part of verification'),
    dns_health: z.enum(['ok', 'degraded']).describe('degraded while the periodic DNS check finds SPF, an active DKIM key or (inbound) MX gone or wrong; sending continues'),
    dns_drift: z.array(
      z.object({
        record: z.enum(['SPF', 'DKIM', 'MX']),
        name: z.string(),
        expected: z.string(),
        found: z.array(z.string()),
        reason: z.string().nullable(),
        since: z.iso.datetime(),
      }),
    ),
    dedicated_ip: z
      .object({
        ip: z.string(),
        helo: z.string(),
        ptr: z.object({
          status: z.enum(['matches', 'mismatch', 'missing', 'unchecked']),
          found: z.array(z.string()),
          warning: z.string().nullable(),
          checked_at: z.iso.datetime().nullable(),
        }),
      })
      .nullable()
      .describe("the domain's dedicated outbound address and its HELO name, with the last verify's PTR check (a warning, never blocking); null: the shared addresses"),
    created_at: z.iso.datetime(),
    verified_at: z.iso.datetime().nullable(),
    last_checked_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'Domain' });

export const AssignIp = z
  .object({ ip: z.string({ error: 'must be an IP address' }).trim().refine((v) => isIP(v) !== 0, 'must be an IP address') })
  .meta({ id: 'AssignDedicatedIp' });

export const DkimRotation = z
  .object({
    domain_id: z.string(),
    name: z.string(),
    state: z.enum(['pending', 'activated']),
    key_type: dkimKeyType,
    selectors: rotationSelectors,
    records: z.array(DnsRecord).describe("the new keys' TXT records: publish them before the activation"),
    started_at: z.iso.datetime(),
    activated_at: z.iso.datetime().nullable(),
    retire_after: z.iso.datetime().nullable(),
  })
  .meta({ id: 'DkimRotation' });
