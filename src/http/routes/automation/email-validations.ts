// Email validation: any key may validate (a sender checks an address before sending to it; nothing is changed).
import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { EmailValidation, ValidateEmail, ValidateEmails } from '../../schemas/automation/email-validations.js';
import { validateEmail, validateEmails } from '../../../services/automation/index.js';

export const emailValidationRoutes = [
  defineRoute({
    method: 'POST',
    path: '/email-validations',
    summary:
      'Validate an address before sending to it: result (deliverable, risky, undeliverable, unknown), the reason that decided it, ' +
      'did_you_mean, and the checks — syntax (IDN, SMTPUTF8), MX (A/AAAA fallback, null MX), disposable domain, role account, ' +
      "typo of a big provider, the team's suppression list. The remote server is never probed over SMTP: deliverable means a " +
      'well-formed address at a domain that takes mail, not that the mailbox exists. DNS answers are kept a minute per domain',
    tag: 'Email validation',
    access: 'sending_access',
    body: ValidateEmail,
    response: EmailValidation,
    async handle({ app, principal, body }) {
      return validateEmail(app, principal.teamId, body.email);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/email-validations/batch',
    summary:
      'Validate up to 1,000 addresses; answers { data } with one validation per address, in the order given ' +
      '(each domain looked up once; a bad address is an undeliverable answer, not an error)',
    tag: 'Email validation',
    access: 'sending_access',
    body: ValidateEmails,
    response: z.object({ data: z.array(EmailValidation) }),
    async handle({ app, principal, body }) {
      return { data: await validateEmails(app, principal.teamId, body.emails) };
    },
  }),
];
