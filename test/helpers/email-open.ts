// Stands in for open/click tracking (another issue) until it lands: records what tracking records when a
// recipient opens or clicks an email — the `opened`/`clicked` timeline row and the `email.opened`/`email.clicked`
// event in the team's event log — in one transaction, as a service would.
import { recordEvent } from '../../src/events/recorder.js';
import type { TestApp } from './app.js';

export async function simulateEngagement(app: TestApp, emailId: string, type: 'opened' | 'clicked', recipient: string): Promise<void> {
  const ctx = app.appliance.ctx;
  await ctx.db.transaction(async (trx) => {
    const email = (await trx('emails').where('public_id', emailId).first('id', 'team_id', 'from_header', 'subject')) as { id: number; team_id: string; from_header: string; subject: string } | undefined;
    if (!email) throw new Error(`no email ${emailId}`);
    const at = ctx.clock.now();
    await trx('email_events').insert({ email_id: email.id, type, data: JSON.stringify({ recipient }), created_at: at.toISOString() });
    await recordEvent(trx, at, email.team_id, type === 'opened' ? 'email.opened' : 'email.clicked', { email_id: emailId, from: email.from_header, to: [recipient], subject: email.subject });
  });
}
