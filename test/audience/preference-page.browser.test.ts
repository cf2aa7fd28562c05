// The hosted preference page in a real browser: Debian's Chromium (/usr/bin/chromium, installed by .ci/run)
// driven by playwright-core, with JavaScript turned off and a phone's viewport. The page is loaded from the
// List-Unsubscribe header of a real email (POST /emails → the job queue → the MTA → a loopback SMTP sink),
// its boxes ticked and its buttons clicked as a person would, and the contact checked through the API.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { chromium, type BrowserContext } from 'playwright-core';
import { headerOf, startUnsubscribeEnv, unsubscribeTargets } from './unsubscribe-support.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** A port free now, so that the box's public URL (in the links it writes) can name it before it listens. */
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

interface Subscriptions {
  unsubscribed: boolean;
  subscriptions: Array<{ topic_id: string; subscribed: boolean }>;
}

t.test('from a real email’s List-Unsubscribe to a changed contact, without JavaScript, on a phone', async (t) => {
  const apiPort = await freePort();
  const env = await startUnsubscribeEnv(t, { apiPort, publicUrl: `http://127.0.0.1:${apiPort}` });
  const ann = await env.contact('ann@dest.example', { first_name: 'Ann' });
  const news = await env.topic('Newsletter', 'opt_in');
  const tips = await env.topic('Product tips', 'opt_out');
  const staff = await env.topic('Staff only', 'opt_in', 'private');

  const sent = await env.send({ to: 'ann@dest.example', topic_id: news });
  t.equal(sent.status, 202);
  await env.drain();
  const raw = env.sink.accepted[0]!.raw;
  const { url } = unsubscribeTargets(headerOf(raw, 'List-Unsubscribe')!);
  t.match(url, new RegExp(`^http://127\\.0\\.0\\.1:${apiPort}/unsubscribe/[a-z2-7]{56}$`), 'the link names the box’s public URL');

  const profile = mkdtempSync(path.join(os.tmpdir(), 'chromium-profile-'));
  let context: BrowserContext | undefined;
  t.teardown(async () => {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
  });
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    javaScriptEnabled: false,
    viewport: { width: 375, height: 740 },
    isMobile: true,
    hasTouch: true,
  });
  const page = context.pages()[0] ?? (await context.newPage());

  const response = await page.goto(url);
  t.equal(response?.status(), 200);
  t.equal(await page.title(), 'Email preferences');
  t.match(await page.textContent('main'), /For ann@dest\.example/);
  const box = (name: string) => page.getByRole('checkbox', { name });
  t.equal(await box('Newsletter').isChecked(), true, 'opt_in topic: ticked by default');
  t.equal(await box('Product tips').isChecked(), false, 'opt_out topic: not ticked');
  t.equal(await page.getByText('Staff only').count(), 0, 'a private topic is not shown');
  const width = await page.evaluate('document.documentElement.scrollWidth');
  t.ok(Number(width) <= 375, `no sideways scrolling on a 375-pixel screen (${String(width)})`);
  const button = await page.getByRole('button', { name: 'Save preferences' }).boundingBox();
  t.ok(button && button.height >= 40, 'a button big enough for a thumb');

  // Leave the newsletter, join the tips, save.
  await box('Newsletter').uncheck();
  await box('Product tips').check();
  await Promise.all([page.waitForURL(/\?done=saved$/), page.getByRole('button', { name: 'Save preferences' }).click()]);
  t.match(await page.getByRole('status').textContent(), /Your preferences are saved/);
  t.equal(await box('Newsletter').isChecked(), false, 'the page shows the change');
  t.equal(await box('Product tips').isChecked(), true);
  let subs = (await env.app.request<Subscriptions>('GET', `/subscription-topics/contacts/${ann}/subscriptions`)).body;
  t.same(
    Object.fromEntries(subs.subscriptions.map((s) => [s.topic_id, s.subscribed])),
    { [news]: false, [tips]: true, [staff]: true },
    'the API sees the contact’s new choices (the private topic untouched)',
  );
  t.equal(subs.unsubscribed, false);
  const events = (await env.app.request<{ data: Array<{ type: string; data: Record<string, unknown> }> }>('GET', '/events?per_page=100')).body.data;
  t.same(events.filter((e) => e.type === 'contact.unsubscribed').map((e) => e.data), [{ contact_id: ann, email: 'ann@dest.example', topic_id: news, email_id: sent.body.id }]);

  // Everything.
  await Promise.all([page.waitForURL(/\?done=saved$/), page.getByRole('button', { name: 'Unsubscribe from everything' }).click()]);
  t.match(await page.textContent('main'), /You are unsubscribed from everything/);
  subs = (await env.app.request<Subscriptions>('GET', `/subscription-topics/contacts/${ann}/subscriptions`)).body;
  t.equal(subs.unsubscribed, true, 'the contact is unsubscribed from everything');
  t.equal((await env.app.request<{ contact: { unsubscribed: boolean } }>('GET', `/contacts/${ann}`)).body.contact.unsubscribed, true);
  t.equal(await page.getByRole('button', { name: 'Subscribe again' }).count(), 1, 'and may come back');

  // A link altered by hand: a page that says so.
  const altered = url.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a'));
  const bad = await page.goto(altered);
  t.equal(bad?.status(), 404);
  t.equal(await page.getByRole('heading').textContent(), 'This link is not valid');
});
