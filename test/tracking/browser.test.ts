// A tracked email in a real browser: Debian's Chromium (/usr/bin/chromium) driven by playwright-core. The
// message the sink MX received is shown by a local web server standing in for a webmail (its html as
// delivered), so the browser fetches the pixel from the box as a mail client does; a click on a link goes
// through the box's 302 to the shop (another local server); an altered link shows the box's 404 page.
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { chromium, type BrowserContext } from 'playwright-core';
import { startTrackingEnv, trackingUrls } from './support.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const DESKTOP_CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

t.test('the pixel loads with the message, a click lands on the shop, an altered link shows a page', async (t) => {
  const env = await startTrackingEnv(t);
  await env.track({ open_tracking: true, click_tracking: true });

  // The shop the email links to, and the "webmail" that shows the delivered html.
  const landed: string[] = [];
  let shown = '';
  const web = http.createServer((req, res) => {
    if (req.url === '/mail') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(shown);
      return;
    }
    if (req.url === '/favicon.ico') {
      res.writeHead(404).end();
      return;
    }
    landed.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!DOCTYPE html><title>Shop</title><h1>Welcome to the shop</h1>');
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (web.closeAllConnections(), web.close(() => resolve()))));
  const shop = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;

  const mail = await env.sendAndDeliver({
    to: 'ann@dest.example',
    html: `<!DOCTYPE html><html><head><title>Offer</title></head><body><h1>Offer</h1><p><a id="buy" href="${shop}/landing?item=42&amp;from=mail">Buy now</a></p></body></html>`,
  });
  const urls = trackingUrls(mail.html);
  t.equal(urls.pixel.length, 1);
  t.equal(urls.links.length, 1);
  shown = mail.html;

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
    userAgent: DESKTOP_CHROME,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const pixel = page.waitForResponse((r) => r.url() === urls.pixel[0]);
  await page.goto(`${shop}/mail`, { waitUntil: 'load' });
  const pixelResponse = await pixel;
  t.equal(pixelResponse.status(), 200, 'the browser loaded the pixel');
  t.equal(pixelResponse.headers()['content-type'], 'image/gif');
  const image = page.locator('img').last();
  t.same(await image.boundingBox().then((b) => b && [b.width, b.height]), [1, 1], 'laid out as a 1×1 image');

  await Promise.all([page.waitForURL(`${shop}/landing?item=42&from=mail`), page.click('#buy')]);
  t.equal(await page.title(), 'Shop', 'the click landed on the shop');
  t.same(landed, ['/landing?item=42&from=mail'], 'once, at the stored URL');

  const events = (await env.app.request<{ events: Array<{ type: string; data: Record<string, unknown> }> }>('GET', `/emails/${mail.id}/events`)).body.events;
  t.match(events.find((e) => e.type === 'opened')?.data, { recipient: 'ann@dest.example', first: true, machine: false, provider: 'other', client: 'Chrome', device: 'desktop', country: null });
  t.match(events.find((e) => e.type === 'clicked')?.data, { recipient: 'ann@dest.example', first: true, url: `${shop}/landing?item=42&from=mail`, link: 0 });

  const token = urls.links[0]!.split('/').pop()!;
  const altered = urls.links[0]!.replace(token, token.slice(0, 10) + (token[10] === 'a' ? 'b' : 'a') + token.slice(11));
  const bad = await page.goto(altered);
  t.equal(bad?.status(), 404);
  t.equal(await page.getByRole('heading').textContent(), 'This link does not work');
  t.equal(page.url(), altered, 'no redirect');
  t.equal(landed.length, 1, 'the shop saw nothing more');
});
