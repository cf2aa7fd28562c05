// Signup forms in a real browser: Debian's Chromium (/usr/bin/chromium) driven by playwright-core. The hosted page
// submitted without JavaScript; the embed snippet on a page served by another origin (a local HTTP server on
// another port) posted as a plain form, and a fetch() from an allowed and from a foreign origin (CORS); the
// confirmation link of the email received at a sink MX opened and confirmed; the contact then confirmed and in
// the segment and topic.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { chromium, type BrowserContext } from 'playwright-core';
import { startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A site on another origin serving one page. */
async function site(html: string): Promise<{ origin: string; server: Server }> {
  const server = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

interface ContactView {
  id: string;
  opt_in_status: string;
  first_name: string | null;
}

t.test('hosted page, embedded snippet on another origin, CORS, and the confirmation link, in Chromium', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  const apiPort = await freePort();
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port, apiPort, publicUrl: `http://127.0.0.1:${apiPort}` } });
  await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const segment = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'List' } })).body.segment.id;
  const topic = (await app.request<{ topic: { id: string } }>('POST', '/subscription-topics', { body: { name: 'News', default_subscription: 'opt_out' } })).body.topic.id;

  // The other origin's page is made first (its origin must be allowed), then given the snippet.
  let snippet = '';
  const other = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!DOCTYPE html><html><head><title>Shop</title></head><body><h1>Our shop</h1>${snippet}</body></html>`);
  });
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => other.close(() => resolve())));
  const otherOrigin = `http://127.0.0.1:${(other.address() as { port: number }).port}`;
  const foreign = await site('<!DOCTYPE html><html><head><title>Evil</title></head><body>evil</body></html>');
  t.teardown(() => new Promise<void>((resolve) => foreign.server.close(() => resolve())));

  const created = await app.request<{ signup_form: { id: string; hosted_url: string; embed_html: string } }>('POST', '/signup-forms', {
    body: {
      name: 'Weekly <news>',
      fields: [{ property: 'first_name', label: 'First name' }],
      segment_id: segment,
      topic_ids: [topic],
      allowed_origins: [otherOrigin],
      double_opt_in: { from: 'News <news@acme.example>', subject: 'Confirm your subscription', html: '<p><a href="{{ confirm_url }}">Confirm</a></p>' },
    },
  });
  t.equal(created.status, 201, 'form created');
  const form = created.body.signup_form;
  snippet = form.embed_html;

  const profile = mkdtempSync(path.join(os.tmpdir(), 'chromium-profile-'));
  let context: BrowserContext | undefined;
  t.teardown(async () => {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
  });
  const launch = (js: boolean) =>
    chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      javaScriptEnabled: js,
    });
  context = await launch(false);
  const page = context.pages()[0] ?? (await context.newPage());

  // 1. The hosted page, without JavaScript.
  const hosted = await page.goto(form.hosted_url);
  t.equal(hosted?.status(), 200);
  t.equal(await page.title(), 'Weekly <news>', 'the name escaped, shown as text');
  t.match(hosted?.headers()['content-security-policy'], /default-src 'none'/);
  await page.getByLabel('Email').fill('ann@dest.example');
  await page.getByLabel('First name').fill('Ann');
  await Promise.all([page.waitForURL(/\/submit$/), page.getByRole('button', { name: 'Subscribe' }).click()]);
  t.match(await page.textContent('main'), /we sent you an email/);
  const ann = (await app.request<{ contact: ContactView }>('GET', '/contacts/ann@dest.example')).body.contact;
  t.match(ann, { opt_in_status: 'pending', first_name: 'Ann' });

  // 2. The snippet on another origin's page, posted as a plain form.
  await page.goto(otherOrigin);
  t.equal(await page.title(), 'Shop');
  await page.getByLabel('Email').fill('bob@dest.example');
  await Promise.all([page.waitForURL(new RegExp(`^http://127\\.0\\.0\\.1:${apiPort}/signup-forms/`)), page.getByRole('button', { name: 'Subscribe' }).click()]);
  t.match(await page.getByRole('status').textContent(), /we sent you an email/, 'the box answers the snippet with its success page');
  t.equal((await app.request<{ contact: ContactView }>('GET', '/contacts/bob@dest.example')).body.contact.opt_in_status, 'pending');
  await context.close();

  // 3. fetch() from the allowed origin works; from a foreign one the browser refuses (CORS) and nothing is stored.
  context = await launch(true);
  const js = context.pages()[0] ?? (await context.newPage());
  const post = (email: string) =>
    js.evaluate(
      async ({ url, email }) => {
        try {
          const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) });
          return { ok: true, status: r.status, body: await r.text() };
        } catch (err) {
          return { ok: false, status: 0, body: String(err) };
        }
      },
      { url: `http://127.0.0.1:${apiPort}/signup-forms/${form.id}/submit`, email },
    );
  await js.goto(otherOrigin);
  const allowed = await post('cy@dest.example');
  t.same([allowed.ok, allowed.status, JSON.parse(allowed.body)], [true, 200, { success: true, confirmation_required: true }], 'allowed origin: readable answer');
  await js.goto(foreign.origin);
  const refused = await post('eve@dest.example');
  t.equal(refused.ok, false, `foreign origin: the browser refuses (${refused.body})`);
  t.equal((await app.request('GET', '/contacts/eve@dest.example')).status, 404, 'and nothing is stored');

  // 4. The confirmation email received at the sink MX; its link opened and confirmed in the browser.
  await app.appliance.ctx.jobs.drain();
  const mails = await Promise.all(sink.accepted.map(async (tx) => ({ to: tx.to[0], parsed: await simpleParser(tx.raw) })));
  const annMail = mails.find((m) => m.to === 'ann@dest.example');
  t.ok(annMail, 'Ann got her confirmation email');
  t.equal(annMail!.parsed.subject, 'Confirm your subscription');
  const link = /href="([^"]+)"/.exec(String(annMail!.parsed.html))![1]!;
  t.match(link, new RegExp(`^http://127\\.0\\.0\\.1:${apiPort}/f/confirm/`));
  const confirmPage = await js.goto(link);
  t.equal(confirmPage?.status(), 200);
  t.match(await js.textContent('main'), /ann@dest\.example/);
  await Promise.all([js.waitForLoadState('load'), js.getByRole('button', { name: 'Confirm my subscription' }).click()]);
  await js.getByRole('heading', { name: 'Subscription confirmed' }).waitFor();
  const confirmed = (await app.request<{ contact: ContactView }>('GET', '/contacts/ann@dest.example')).body.contact;
  t.equal(confirmed.opt_in_status, 'confirmed');
  t.same((await app.request<{ data: Array<{ id: string }> }>('GET', `/contacts?segment_id=${segment}`)).body.data.map((c) => c.id), [ann.id], 'in the segment');
  t.same((await app.request<{ data: Array<{ contact_id: string }> }>('GET', `/subscription-topics/${topic}/subscribers?subscribed=true`)).body.data.map((s) => s.contact_id), [ann.id], 'subscribed to the topic');
});
