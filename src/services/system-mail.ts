// Email the box sends on its own behalf (a webhook endpoint disabled, …) to a team's owner: from
// notifications@<MAIL_HOSTNAME>, through the same tables and `email.deliver` job as every send. It has no
// team sender domain and no API key, so it is not DKIM-signed (delivery.ts recognises it by that).
import type { AppContext } from '../context.js';
import type { Queryable } from '../db/index.js';
import { insertEmail, prepareInput, type SendEmailInput } from './emails.js';

export interface SystemEmail {
  teamId: string;
  to: string;
  subject: string;
  text: string;
}

export const systemSender = (hostname: string) => `Mail appliance <notifications@${hostname}>`;

/** Queues the email in the caller's transaction; returns its public id. */
export async function sendSystemEmail(ctx: AppContext, q: Queryable, at: Date, mail: SystemEmail): Promise<string> {
  const input: SendEmailInput = { from: systemSender(ctx.config.hostname), to: [mail.to], subject: mail.subject, text: mail.text };
  const prepared = prepareInput(input);
  return insertEmail(ctx, q, at, { teamId: mail.teamId, apiKeyId: null, mode: 'live' }, input, { ...prepared, domainId: null }, null);
}
