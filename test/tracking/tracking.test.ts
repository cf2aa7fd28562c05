// Open and click tracking end to end: the pixel and the rewritten links in the message the sink MX received,
// fetched from that message's own URLs; the 302 to the stored link; forged and altered tokens (never a
// redirect, never a 500); the timeline, the webhook events and the contact's engagement columns; machine opens;
// the GET /emails filters; tenant isolation.
import t from 'tap';
import { MINUTE } from '../../src/core/clock.js';
import { recordOpen } from '../../src/services/sending/tracking.js';
import { PIXEL_GIF } from '../../src/http/routes/sending/tracking.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';
import { startTrackingEnv, trackingUrls, UA, type TrackingEnv } from './support.js';

interface Timeline {
  events: Array<{ type: string; timestamp: string; data: Record<string, unknown> }>;
}
interface EventPage {
  data: Array<{ type: string; data: Record<string, unknown> }>;
}
interface ListPage {
  data: Array<{ publicId: string }>;
}

const HTML = [
  '<html><head><title>x</title></head><body>',
  '<p><a href="https://shop.example/item?id=1&amp;ref=mail" class="btn">Buy</a></p>',
  '<p><a href="http://blog.example/post">Read</a> <a href="mailto:help@acme.example">Mail us</a> <a href="#top">Top</a>',
  '<a href="/relative">Relative</a> <a href="tel:+3312345">Call</a></p>',
  '<p><A HREF=" https://shop.example/other ">Other</A></p>',
  '<p><a href="https://news.acme.example/unsubscribe/abc">Unsubscribe</a> <a href="https://other.example/track/click/x">Tracked elsewhere</a></p>',
  '</body></html>',
].join('\n');

const get = (url: string, ua: string, method = 'GET') => fetch(url, { method, headers: { 'user-agent': ua }, redirect: 'manual' });
const timeline = async (env: TrackingEnv, id: string, key?: string) => (await env.app.request<Timeline>('GET', `/emails/${id}/events`, key ? { key } : {})).body.events;
const events = async (env: TrackingEnv, type: string, key?: string) =>
  (await env.app.request<EventPage>('GET', '/events?per_page=100', key ? { key } : {})).body.data.filter((e) => e.type === type).map((e) => e.data);
const contactRow = (env: TrackingEnv, teamId: string, emailKey: string) =>
  env.app.appliance.ctx.db('contacts').where({ team_id: teamId, email_key: emailKey }).first('last_opened_at', 'last_clicked_at');
const listIds = async (env: TrackingEnv, query: string, key?: string) => (await env.app.request<ListPage>('GET', `/emails?${query}`, key ? { key } : {})).body.data.map((e) => e.publicId);

t.test('tracking off (the default): the html goes as it was given', async (t) => {
  const env = await startTrackingEnv(t);
  const mail = await env.sendAndDeliver({ to: 'ann@dest.example', html: HTML });
  t.same(trackingUrls(mail.html), { pixel: [], links: [] });
  t.match(mail.html, /href="https:\/\/shop\.example\/item\?id=1&amp;ref=mail"/);
});

t.test('a tracked email: pixel and links in the received message, fetched from its own URLs', async (t) => {
  const env = await startTrackingEnv(t);
  await env.track({ open_tracking: true, click_tracking: true });
  const contact = await env.app.request<{ contact: { id: string } }>('POST', '/contacts', { body: { email: 'Ann@Dest.Example' } });
  t.equal(contact.status, 201);
  const mail = await env.sendAndDeliver({ to: 'ann@dest.example', html: HTML, unsubscribe: true });
  const urls = trackingUrls(mail.html);
  t.equal(urls.pixel.length, 1, 'one pixel');
  t.match(mail.html, /<img src="[^"]+\/track\/open\/[a-z2-7]{48}" width="1" height="1" alt=""[^>]*\/><\/body>/, 'the pixel is the last thing in the body');
  t.equal(urls.links.length, 3, 'the three http(s) links are rewritten');
  for (const u of [...urls.pixel, ...urls.links]) t.ok(u.startsWith(`${env.app.url}/track/`), `on the box's public URL: ${u}`);
  t.match(mail.html, /<a href="http:\/\/127\.0\.0\.1:\d+\/track\/click\/[a-z2-7]{48}" class="btn">Buy<\/a>/, 'other attributes kept');
  t.match(mail.html, /href="mailto:help@acme\.example"/, 'mailto: kept');
  t.match(mail.html, /href="#top"/, 'anchor kept');
  t.match(mail.html, /href="\/relative"/, 'relative kept');
  t.match(mail.html, /href="tel:\+3312345"/, 'tel: kept');
  t.match(mail.html, /href="https:\/\/news\.acme\.example\/unsubscribe\/abc"/, 'an unsubscribe link kept');
  t.match(mail.html, /href="https:\/\/other\.example\/track\/click\/x"/, 'a tracking link kept');
  t.match(mail.raw.toString(), /DKIM-Signature:/, 'signed as ever');
  t.equal(new Set(urls.links).size, 3, 'each link its own token');

  // The stored email is what the API took.
  const detail = await env.app.request<{ html: string }>('GET', `/emails/${mail.id}`);
  t.equal(detail.body.html, HTML);

  env.app.clock.advance(MINUTE);
  const pixel = await get(urls.pixel[0]!, UA.appleMailIphone);
  t.equal(pixel.status, 200);
  t.equal(pixel.headers.get('content-type'), 'image/gif');
  t.match(pixel.headers.get('cache-control'), /no-store/);
  t.match(pixel.headers.get('cache-control'), /no-cache/);
  t.same(Buffer.from(await pixel.arrayBuffer()), PIXEL_GIF, 'a 1×1 GIF');

  const click = await get(urls.links[0]!, UA.chromeAndroid);
  t.equal(click.status, 302);
  t.equal(click.headers.get('location'), 'https://shop.example/item?id=1&ref=mail', 'to the stored link, entities decoded');
  t.match(click.headers.get('cache-control'), /no-store/);
  t.equal((await get(urls.links[1]!, UA.chromeAndroid)).headers.get('location'), 'http://blog.example/post');
  t.equal((await get(urls.links[2]!, UA.chromeAndroid)).headers.get('location'), 'https://shop.example/other', 'blanks around an href trimmed');

  // A second open, through Gmail's proxy; Apple MPP's prefetch is a machine's.
  env.app.clock.advance(MINUTE);
  t.equal((await get(urls.pixel[0]!, UA.gmailProxy)).status, 200);
  t.equal((await get(urls.pixel[0]!, UA.appleMpp)).status, 200);

  const entries = await timeline(env, mail.id);
  const opened = entries.filter((e) => e.type === 'opened');
  const clicked = entries.filter((e) => e.type === 'clicked');
  t.equal(opened.length, 3, 'every open in the timeline');
  t.equal(clicked.length, 3, 'every click in the timeline');
  t.match(opened[0]!.data, { recipient: 'ann@dest.example', first: true, machine: false, proxy: null, provider: 'apple', device: 'mobile', country: null, os: 'iOS' });
  t.match(opened[1]!.data, { first: false, machine: false, proxy: 'gmail', provider: 'gmail', device: 'unknown', country: null });
  t.match(opened[2]!.data, { first: false, machine: true, proxy: 'apple_mpp', provider: 'apple' });
  t.match(clicked[0]!.data, { recipient: 'ann@dest.example', first: true, link: 0, url: 'https://shop.example/item?id=1&ref=mail', provider: 'other', device: 'mobile', client: 'Chrome' });
  t.match(clicked[1]!.data, { first: false, link: 1, url: 'http://blog.example/post' });

  const webhookOpens = await events(env, 'email.opened');
  t.equal(webhookOpens.length, 3, 'email.opened on every hit');
  t.same(webhookOpens.map((e) => e.first).sort(), [false, false, true], 'one of them first');
  t.match(webhookOpens.find((e) => e.first === true), { email_id: mail.id, recipient: 'ann@dest.example', subject: 'Hello', machine: false });
  const webhookClicks = await events(env, 'email.clicked');
  t.equal(webhookClicks.length, 3);
  t.match(webhookClicks.find((e) => e.link === 0), { email_id: mail.id, url: 'https://shop.example/item?id=1&ref=mail', first: true });

  const engagement = await contactRow(env, env.app.teamId, 'ann@dest.example');
  t.equal(engagement.last_clicked_at, '2026-03-01T10:01:00.000Z', "the contact's last click");
  t.equal(engagement.last_opened_at, '2026-03-01T10:02:00.000Z', "the contact's last open: Gmail's (a person), not Apple's prefetch after it");
  const rows = await env.app.appliance.ctx.db('email_engagement').orderBy('kind');
  t.match(rows, [
    { kind: 'click', hits: 3, machine_hits: 0, first_at: '2026-03-01T10:01:00.000Z' },
    { kind: 'open', hits: 3, machine_hits: 1, first_at: '2026-03-01T10:01:00.000Z', first_person_at: '2026-03-01T10:01:00.000Z', last_at: '2026-03-01T10:02:00.000Z' },
  ]);

  // HEAD (a link scanner) answers the same and records nothing.
  const head = await get(urls.links[0]!, UA.chromeWindows, 'HEAD');
  t.equal(head.status, 302);
  t.equal(head.headers.get('location'), 'https://shop.example/item?id=1&ref=mail');
  t.equal((await get(urls.pixel[0]!, UA.chromeWindows, 'HEAD')).status, 200);
  t.equal((await timeline(env, mail.id)).length, entries.length, 'HEAD recorded nothing');
});

t.test('forged and altered tokens: a pixel still, never a redirect, never a 500', async (t) => {
  const env = await startTrackingEnv(t);
  await env.track({ open_tracking: true, click_tracking: true });
  const mail = await env.sendAndDeliver({ to: 'bob@dest.example', html: HTML });
  const urls = trackingUrls(mail.html);
  const clickToken = urls.links[0]!.split('/').pop()!;
  const openToken = urls.pixel[0]!.split('/').pop()!;
  const flip = (token: string, at: number) => token.slice(0, at) + (token[at] === 'a' ? 'b' : 'a') + token.slice(at + 1);
  const bad = (token: string, wrongKind: string) => [
    'a'.repeat(48),
    flip(token, 5), // the email key
    flip(token, 23), // the link index
    flip(token, 47), // the MAC
    token.slice(0, 47),
    `${token}a`,
    wrongKind, // an open's token is no click's, and the other way round
    'not-a-token',
    '%E2%80%AE'.repeat(10),
    'x'.repeat(3000),
  ];
  for (const token of bad(clickToken, openToken)) {
    const click = await get(`${env.app.url}/track/click/${token}`, UA.chromeWindows);
    t.equal(click.status, 404, `click ${token.slice(0, 20)}…: 404`);
    t.equal(click.headers.get('location'), null, 'no redirect');
    t.match(click.headers.get('content-type'), /^text\/html/);
    t.match(await click.text(), /This link does not work/);
  }
  for (const token of bad(openToken, clickToken)) {
    const pixel = await get(`${env.app.url}/track/open/${token}`, UA.chromeWindows);
    t.equal(pixel.status, 200, `pixel ${token.slice(0, 20)}…: still a pixel`);
    t.equal(pixel.headers.get('content-type'), 'image/gif');
    t.same(Buffer.from(await pixel.arrayBuffer()), PIXEL_GIF);
  }
  t.same(
    (await timeline(env, mail.id)).filter((e) => e.type === 'opened' || e.type === 'clicked'),
    [],
    'nothing recorded',
  );
  // A click token of an email that is gone: 404 as well.
  await env.app.appliance.ctx.db('emails').where({ public_id: mail.id }).delete();
  const gone = await get(urls.links[0]!, UA.chromeWindows);
  t.equal(gone.status, 404);
  t.equal((await get(urls.pixel[0]!, UA.chromeWindows)).status, 200);
});

t.test('an email to several recipients: one message, hits not told apart', async (t) => {
  const env = await startTrackingEnv(t);
  await env.track({ open_tracking: true });
  await env.app.request('POST', '/contacts', { body: { email: 'ann@dest.example' } });
  const mail = await env.sendAndDeliver({ to: ['ann@dest.example', 'bob@dest.example'], html: '<p>Hi <a href="https://x.example/">x</a></p>' });
  const urls = trackingUrls(mail.html);
  t.equal(urls.pixel.length, 1);
  t.equal(urls.links.length, 0, 'clicks not tracked: links as given');
  t.match(mail.html, /<p>Hi <a href="https:\/\/x\.example\/">x<\/a><\/p><img src=/, 'no </body>: the pixel at the end');
  t.equal((await get(urls.pixel[0]!, UA.chromeWindows)).status, 200);
  const [opened] = (await timeline(env, mail.id)).filter((e) => e.type === 'opened');
  t.match(opened!.data, { recipient: null, first: true, device: 'desktop', provider: 'other' });
  t.equal((await contactRow(env, env.app.teamId, 'ann@dest.example')).last_opened_at, null, 'no contact is credited');
});

t.test('GET /emails?provider=&country=&device= match tracked hits; the GeoIP country of a hit', async (t) => {
  const env = await startTrackingEnv(t);
  await env.track({ open_tracking: true, click_tracking: true });
  const a = await env.sendAndDeliver({ to: 'a@dest.example', html: HTML });
  const b = await env.sendAndDeliver({ to: 'b@dest.example', html: HTML });
  const c = await env.sendAndDeliver({ to: 'c@dest.example', html: HTML });
  t.equal((await get(trackingUrls(a.html).pixel[0]!, UA.gmailProxy)).status, 200);
  t.equal((await get(trackingUrls(b.html).links[0]!, UA.chromeAndroid)).status, 302);
  // A public address (the loopback client has none): through the service, as the route calls it.
  const token = trackingUrls(c.html).pixel[0]!.split('/').pop()!;
  await recordOpen(env.app.appliance.ctx, token, { ip: '81.2.69.160', userAgent: UA.outlookDesktop });

  t.same(await listIds(env, 'provider=gmail'), [a.id]);
  t.same(await listIds(env, 'provider=GMAIL'), [a.id], 'any case');
  t.same(await listIds(env, 'device=mobile'), [b.id]);
  t.same(await listIds(env, 'provider=outlook'), [c.id]);
  t.same(await listIds(env, 'country=gb'), [c.id], 'the GeoIP country');
  t.same(await listIds(env, 'country=GB&device=desktop'), [c.id]);
  t.same(await listIds(env, 'country=GB&device=mobile'), [], 'all given filters match the same hit');
  t.same(await listIds(env, 'country=US'), [], 'loopback clients have no country');
  t.same(await listIds(env, 'device=unknown'), [a.id], "a proxy's device is unknown");
  t.equal((await listIds(env, '')).length, 3, 'without filters, every email');
  const [opened] = (await timeline(env, c.id)).filter((e) => e.type === 'opened');
  t.match(opened!.data, { country: 'GB', provider: 'outlook', device: 'desktop', machine: false });
});

t.test('tenant isolation: a hit is its email team’s alone', async (t) => {
  const env = await startTrackingEnv(t);
  await env.track({ open_tracking: true, click_tracking: true });
  const other = await env.other();
  // The other team has a contact at the same address, and tracking domains of its own.
  t.equal((await env.app.request('POST', '/contacts', { body: { email: 'ann@dest.example' }, key: other.apiKey })).status, 201);
  t.equal((await env.app.request('POST', '/contacts', { body: { email: 'ann@dest.example' } })).status, 201);
  const mail = await env.sendAndDeliver({ to: 'ann@dest.example', html: HTML });
  const urls = trackingUrls(mail.html);
  t.equal((await get(urls.pixel[0]!, UA.chromeWindows)).status, 200);
  t.equal((await get(urls.links[0]!, UA.chromeWindows)).status, 302);

  t.equal((await events(env, 'email.opened')).length, 1, 'the sender team has the event');
  t.same(await events(env, 'email.opened', other.apiKey), [], 'the other team has none');
  t.same(await events(env, 'email.clicked', other.apiKey), []);
  t.equal((await env.app.request('GET', `/emails/${mail.id}/events`, { key: other.apiKey })).status, 404, "the other team cannot read the timeline");
  t.same(await listIds(env, 'device=desktop', other.apiKey), [], "nor find the email by its hits");
  t.same(await listIds(env, 'device=desktop'), [mail.id]);
  t.not((await contactRow(env, env.app.teamId, 'ann@dest.example')).last_opened_at, null, "the sender team's contact is credited");
  t.same(await contactRow(env, other.teamId, 'ann@dest.example'), { last_opened_at: null, last_clicked_at: null }, "the other team's contact at the same address is not");
});

t.test('email.opened and email.clicked reach a subscribed webhook endpoint', async (t) => {
  const env = await startTrackingEnv(t);
  await env.track({ open_tracking: true, click_tracking: true });
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  const hook = await env.app.request('POST', '/webhooks', { body: { url: receiver.url, events: ['email.opened', 'email.clicked'] } });
  t.equal(hook.status, 201);
  const mail = await env.sendAndDeliver({ to: 'ann@dest.example', html: HTML });
  const urls = trackingUrls(mail.html);
  t.equal((await get(urls.pixel[0]!, UA.gmailProxy)).status, 200);
  t.equal((await get(urls.pixel[0]!, UA.gmailProxy)).status, 200);
  t.equal((await get(urls.links[1]!, UA.chromeWindows)).status, 302);
  await env.app.appliance.ctx.jobs.drain();
  const got = receiver.delivered.map((r) => r.json);
  t.same(got.map((e) => e.type).sort(), ['email.clicked', 'email.opened', 'email.opened'], 'every hit, only the kinds subscribed');
  const opens = got.filter((e) => e.type === 'email.opened');
  t.same(opens.map((e) => e.data.first), [true, false], 'first on the first open only');
  t.match(opens[0]!.data, { email_id: mail.id, recipient: 'ann@dest.example', provider: 'gmail', proxy: 'gmail', machine: false, device: 'unknown', country: null, subject: 'Hello' });
  t.match(got.find((e) => e.type === 'email.clicked')!.data, { email_id: mail.id, first: true, link: 1, url: 'http://blog.example/post', provider: 'other', device: 'desktop' });
});
