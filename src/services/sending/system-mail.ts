// Email the box sends on its own behalf (a webhook endpoint disabled, …) to a team's owner: from
// notifications@<MAIL_HOSTNAME>, through the same tables and `email.deliver` job as every send. It has no
// team sender domain and no API key, so it is not DKIM-signed (delivery.ts recognises it by that).
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/index.js';
import { AppError } from '../../core/errors.js';
import { prepareInput, writeEmails, type SendEmailInput } from './emails.js';

export interface SystemEmail {
  teamId: string;
  to: string;
  subject: string;
  text: string;
}

export const systemSender = (hostname: string) => `Mail appliance <notifications@${hostname}>`;

/** Queues the email in the caller's (write) transaction; returns its public id. */
export async function sendSystemEmail(ctx: AppContext, q: Queryable, mail: SystemEmail): Promise<string> {
  const input: SendEmailInput = { from: systemSender(ctx.config.hostname), to: [mail.to], subject: mail.subject, text: mail.text };
  const [result] = await writeEmails(ctx, q, [{ sender: { teamId: mail.teamId, apiKeyId: null, mode: 'live' }, input, checked: { ...prepareInput(input), domainId: null }, hash: null }]);
  if (result instanceof AppError) throw result;
  return result!.id;
}
