// Opens and clicks as open/click tracking records them: an `opened` or `clicked` row in the email's timeline
// (email_events), for tests of what reads them (broadcast analytics, A/B winners) until they can fetch the
// tracking URLs of a received message. `machine`: an image proxy's fetch (Apple MPP and the like), not a person.
import type { TestApp } from './app.js';

export async function recordEngagement(app: TestApp, emailPublicId: string, type: 'opened' | 'clicked', opts: { machine?: boolean; url?: string } = {}): Promise<void> {
  const db = app.appliance.ctx.db;
  const email = (await db('emails').where({ public_id: emailPublicId }).first('id')) as { id: number } | undefined;
  if (!email) throw new Error(`no email ${emailPublicId}`);
  const data = { machine: opts.machine ?? false, ...(type === 'clicked' ? { url: opts.url ?? 'https://example.com/' } : {}) };
  await db('email_events').insert({ email_id: email.id, type, data: JSON.stringify(data), created_at: app.clock.now().toISOString() });
}
