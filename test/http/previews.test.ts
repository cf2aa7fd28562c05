// Previews and sends with hostile html: answered (never a 500), and the appliance keeps answering meanwhile.
import t from 'tap';
import { startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';

t.test('hostile html bodies', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  await addVerifiedDomain(app, dns, 'send.example');
  const key = (await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'test', permission: 'full_access', mode: 'test' } })).body.token;
  const base = { from: 'hello@send.example', to: ['someone@dest.example'], subject: 'Hi' };

  /** The request's status, and how many /health requests were answered while it ran. */
  async function withHealth(path: string, body: Record<string, unknown>): Promise<{ status: number; healthy: number; text?: string }> {
    let done = false;
    let healthy = 0;
    const heavy = app.request<{ text?: string }>('POST', path, { key, body }).finally(() => (done = true));
    const poll = (async () => {
      while (!done) {
        if ((await app.request('GET', '/health', { key: null })).status === 200 && !done) healthy++;
      }
    })();
    const res = await heavy;
    await poll;
    return { status: res.status, healthy, text: res.body.text };
  }

  t.test('spam-preview of tag-heavy bodies is answered', async (t) => {
    for (const html of ['<a '.repeat(1_000_000), '<img src='.repeat(400_000), '<a href="http://e.example/">http://f.example/</a>'.repeat(100_000)]) {
      const res = await withHealth('/emails/spam-preview', { ...base, html });
      t.equal(res.status, 200);
    }
  });

  t.test('preview of a 15 MB body: the text is derived off the event loop, /health answers meanwhile', async (t) => {
    const res = await withHealth('/emails/preview', { ...base, html: '<p>'.repeat(5_000_000) });
    t.equal(res.status, 200);
    t.ok(res.healthy >= 1, `/health answered ${res.healthy} times during the preview`);
  });

  t.test('deeply nested html: previewed and sent (the text falls back to plain derivation), never a 500', async (t) => {
    const html = `${'<div>'.repeat(20000)}deep text${'</div>'.repeat(20000)}`;
    const preview = await app.request<{ text: string }>('POST', '/emails/preview', { key, body: { ...base, html } });
    t.equal(preview.status, 200);
    t.match(preview.body.text, /deep text/);
    const sent = await app.request<{ id: string }>('POST', '/emails', { key, body: { ...base, html } });
    t.equal(sent.status, 202);
    await app.appliance.ctx.jobs.drain();
    const detail = await app.request<{ status: string; text: string }>('GET', `/emails/${sent.body.id}`, { key });
    t.equal(detail.body.status, 'delivered');
    t.match(detail.body.text, /deep text/);
  });
});
