// The domain's tracking settings: open_tracking / click_tracking / tracking_subdomain through the API, the
// TRACKING CNAME in dns_records and its check by verify, and the tracking URLs on the subdomain once it is
// verified (fetched from the received message, the box answering whatever the Host).
import t from 'tap';
import { TEST_HOSTNAME } from '../helpers/app.js';
import { startTrackingEnv, trackingUrls, UA } from './support.js';

interface Record {
  record: string;
  type: string;
  name: string;
  value: string;
  required: boolean;
  status: string;
  reason?: string;
  zone_file_line: string;
}
interface Domain {
  id: string;
  status: string;
  open_tracking: boolean;
  click_tracking: boolean;
  tracking_subdomain: string | null;
  dns_records: Record[];
}

t.test('tracking settings, the TRACKING CNAME and verify', async (t) => {
  const env = await startTrackingEnv(t);
  const { app, dns } = env;
  const id = env.domain.id;
  const view = async () => (await app.request<Domain>('GET', `/domains/${id}`)).body;
  t.match(await view(), { open_tracking: false, click_tracking: false, tracking_subdomain: null });
  t.notOk((await view()).dns_records.some((r) => r.record === 'TRACKING'), 'no CNAME without a subdomain');

  for (const bad of ['two.labels', '-x', '', 'a_b', 'x'.repeat(64), 'trä ck']) {
    const res = await app.request('PATCH', `/domains/${id}`, { body: { tracking_subdomain: bad } });
    t.equal(res.status, 400, `tracking_subdomain ${JSON.stringify(bad)}`);
    t.match(res.body, { code: 'invalid_request', error: /^tracking_subdomain: / });
  }
  t.equal((await app.request('PATCH', `/domains/${id}`, { body: { tracking_subdomain: 42 } })).status, 400);
  const created = await app.request<Domain>('POST', '/domains', { body: { name: 'other.example', tracking_subdomain: 'Links', open_tracking: true } });
  t.equal(created.status, 201);
  t.match(created.body, { tracking_subdomain: 'links', open_tracking: true, click_tracking: false }, 'set at creation, lower-cased');

  const patched = await app.request('PATCH', `/domains/${id}`, { body: { open_tracking: true, click_tracking: true, tracking_subdomain: 'Track' } });
  t.equal(patched.status, 200);
  const domain = await view();
  t.match(domain, { open_tracking: true, click_tracking: true, tracking_subdomain: 'track', status: 'verified' });
  const cname = domain.dns_records.find((r) => r.record === 'TRACKING')!;
  t.match(cname, { type: 'CNAME', name: 'track.acme.example', value: TEST_HOSTNAME, required: false, status: 'pending', zone_file_line: `track.acme.example. IN CNAME ${TEST_HOSTNAME}.` });

  // Not published yet: the record fails, the domain stays verified (the record is optional), and mail keeps
  // the box's own URL.
  let verified = (await app.request<Domain>('POST', `/domains/${id}/verify`)).body;
  t.equal(verified.status, 'verified');
  t.match(verified.dns_records.find((r) => r.record === 'TRACKING'), { status: 'failed', reason: /No CNAME record found at track\.acme\.example/ });
  let mail = await env.sendAndDeliver({ to: 'ann@dest.example', html: '<body><a href="https://shop.example/">x</a></body>' });
  t.ok(trackingUrls(mail.html).links[0]!.startsWith(`${app.url}/track/click/`), 'unverified: the public URL');

  dns.set('CNAME', 'track.acme.example', ['elsewhere.example']);
  verified = (await app.request<Domain>('POST', `/domains/${id}/verify`)).body;
  t.match(verified.dns_records.find((r) => r.record === 'TRACKING'), { status: 'failed', reason: `The CNAME record at track.acme.example points at elsewhere.example, not at ${TEST_HOSTNAME}` });

  dns.set('CNAME', 'track.acme.example', [TEST_HOSTNAME]);
  verified = (await app.request<Domain>('POST', `/domains/${id}/verify`)).body;
  t.match(verified.dns_records.find((r) => r.record === 'TRACKING'), { status: 'verified' });
  t.equal(verified.status, 'verified');

  mail = await env.sendAndDeliver({ to: 'ann@dest.example', html: '<body><a href="https://shop.example/">x</a></body>' });
  const urls = trackingUrls(mail.html);
  const port = new URL(app.url).port;
  t.match(urls.pixel[0], new RegExp(`^http://track\\.acme\\.example:${port}/track/open/[a-z2-7]{48}$`), "verified: the domain's tracking name");
  t.match(urls.links[0], new RegExp(`^http://track\\.acme\\.example:${port}/track/click/[a-z2-7]{48}$`));
  // The name resolves to the box; here the request goes to it directly with that Host.
  const click = await fetch(`${app.url}${new URL(urls.links[0]!).pathname}`, { headers: { 'user-agent': UA.chromeWindows }, redirect: 'manual' });
  t.equal(click.status, 302);
  t.equal(click.headers.get('location'), 'https://shop.example/');

  // Back to the box's URL.
  t.equal((await app.request('PATCH', `/domains/${id}`, { body: { tracking_subdomain: null } })).status, 200);
  const cleared = await view();
  t.equal(cleared.tracking_subdomain, null);
  t.notOk(cleared.dns_records.some((r) => r.record === 'TRACKING'));
  mail = await env.sendAndDeliver({ to: 'ann@dest.example', html: '<body><a href="https://shop.example/">x</a></body>' });
  t.ok(trackingUrls(mail.html).pixel[0]!.startsWith(`${app.url}/track/open/`));

  // Switched off: nothing rewritten.
  t.equal((await app.request('PATCH', `/domains/${id}`, { body: { open_tracking: false, click_tracking: false } })).status, 200);
  mail = await env.sendAndDeliver({ to: 'ann@dest.example', html: '<body><a href="https://shop.example/">x</a></body>' });
  t.same(trackingUrls(mail.html), { pixel: [], links: [] });
});
