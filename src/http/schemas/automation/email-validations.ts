// Email validation (spec: POST /email-validations, /batch; the body and answer shapes are ours, see README).
// An address that is not an address is not a 400: it is validated, and answers `undeliverable`, `invalid_syntax`.
// A 400 is for a body that is not `{ email }` / `{ emails: [...] }`, or a batch past its bound.
import { z } from 'zod';
import { MAX_VALIDATION_BATCH, MX_STATUSES, VALIDATION_REASONS, VALIDATION_RESULTS } from '../../../services/automation/index.js';

/** Longer is not an address (RFC 5321: 254 octets) and not worth reading: refused with the body. */
export const MAX_VALIDATED_LENGTH = 1024;

const candidate = z
  .string({ error: 'must be a string' })
  .max(MAX_VALIDATED_LENGTH, `must be at most ${MAX_VALIDATED_LENGTH.toLocaleString('en-US')} characters`);

export const ValidateEmail = z
  .object({ email: candidate.describe('a bare address (no display name); an internationalised domain or local part is fine') })
  .meta({ id: 'ValidateEmail' });

export const ValidateEmails = z
  .object({
    emails: z
      .array(candidate, { error: 'must be an array of strings' })
      .min(1, 'must contain at least 1 address')
      .max(MAX_VALIDATION_BATCH, `must contain at most ${MAX_VALIDATION_BATCH.toLocaleString('en-US')} addresses (the batch limit)`),
  })
  .meta({ id: 'ValidateEmails' });

const MailRoute = z.object({
  status: z
    .enum(MX_STATUSES)
    .describe(
      'found: MX records; implicit: no MX, the A/AAAA records take mail (RFC 5321 §5.1); null_mx: the domain takes no mail (RFC 7505); ' +
        'no_records: NXDOMAIN, or neither MX nor address records; lookup_failed: SERVFAIL or timeout; not_checked: invalid syntax',
    ),
  records: z.array(z.object({ exchange: z.string(), priority: z.number().int() })).describe('the hosts that take the mail, by preference'),
  message: z.string().nullable().describe("what the DNS said, when mail cannot go there or it is not known"),
});

export const EmailValidation = z
  .object({
    success: z.literal(true),
    email: z.string().describe('as given'),
    normalized_email: z.string().nullable().describe('local part as given, domain lower-cased in ASCII (IDNA); null when the syntax is not valid'),
    user: z.string().nullable().describe('the local part'),
    domain: z.string().nullable().describe('ASCII (IDNA) form'),
    result: z
      .enum(VALIDATION_RESULTS)
      .describe('deliverable: send; risky: takes mail but something speaks against it (reason); undeliverable: do not send; unknown: the DNS did not answer, try later'),
    reason: z
      .enum(VALIDATION_REASONS)
      .describe(
        'the check that decided, weighed in this order: invalid_syntax, suppressed, null_mx, no_mail_server (undeliverable); dns_unavailable (unknown); ' +
          'disposable, possible_typo, role_account (risky); mail_server_found (deliverable)',
      ),
    did_you_mean: z.string().nullable().describe('the address with the big provider probably meant (gmial.com → gmail.com, .con → .com), else null'),
    checks: z.object({
      syntax: z.object({
        valid: z.boolean(),
        message: z.string().nullable().describe('why not, when not valid'),
        smtputf8: z.boolean().describe('the local part is not ASCII: every hop must speak SMTPUTF8 (RFC 6531)'),
        idn: z.boolean().describe('the domain is internationalised'),
      }),
      mx: MailRoute,
      disposable: z.boolean().describe('the domain, or a host its mail goes to, is on the disposable-email-domains list'),
      role: z.boolean().describe('the local part names a function (postmaster, info, noreply, …), not a person'),
      typo: z.boolean().describe('the domain looks like a slip (did_you_mean)'),
      suppressed: z.boolean().describe("the address is on the team's suppression list: the box will not send to it"),
    }),
  })
  .meta({ id: 'EmailValidation' });
