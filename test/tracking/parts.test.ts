// The pure parts of tracking: the signed token, the html rewriting and the stored links it redirects to, the
// user agent (provider, device, proxies, machine opens) and the offline GeoIP country.
import t from 'tap';
import { countryOf, describeClient, parseAgent } from '../../src/services/sending/tracking-client.js';
import { rewriteForTracking, trackedLinks } from '../../src/services/sending/tracking-html.js';
import { keptLink, linksOf, trackingBaseUrl, trackingHostOf } from '../../src/services/sending/tracking.js';
import { readTrackingToken, signTrackingToken, TRACKING_TOKEN_LENGTH } from '../../src/services/sending/tracking-tokens.js';
import type { AppContext } from '../../src/context.js';
import { SecretBox } from '../../src/core/secrets.js';
import { UA } from './support.js';

t.test('the GeoIP country of an address (offline table)', async (t) => {
  t.equal(countryOf('81.2.69.160'), 'GB', 'a public test address (MaxMind’s own test data: United Kingdom)');
  t.equal(countryOf('8.8.8.8'), 'US');
  t.equal(countryOf('::ffff:81.2.69.160'), 'GB', 'an IPv4-mapped address, as Node gives a dual-stack socket');
  t.equal(countryOf('2a00:1450:4001:80b::200e'), 'DE', 'IPv6');
  t.equal(countryOf('127.0.0.1'), null, 'loopback: no country');
  t.equal(countryOf('::1'), null, 'IPv6 loopback: no country');
  t.equal(countryOf('::ffff:127.0.0.1'), null);
  t.equal(countryOf('10.1.2.3'), null, 'private: no country');
  t.equal(countryOf('192.168.1.1'), null);
  t.equal(countryOf(''), null, 'not an address');
  t.equal(countryOf('not-an-ip'), null);
});

t.test('the user agent: provider, device, proxies and machine opens', async (t) => {
  t.match(parseAgent(UA.gmailProxy), { provider: 'gmail', proxy: 'gmail', device: 'unknown', machine: false });
  t.match(parseAgent(UA.yahooProxy), { provider: 'yahoo', proxy: 'yahoo', device: 'unknown', machine: false });
  t.match(parseAgent(UA.appleMpp), { provider: 'apple', proxy: 'apple_mpp', device: 'unknown', machine: true }, 'Apple MPP: the bare Mozilla/5.0');
  t.match(parseAgent(UA.appleMailIphone), { provider: 'apple', proxy: null, device: 'mobile', os: 'iOS', machine: false }, 'Apple Mail on an iPhone');
  t.match(parseAgent('Mozilla/5.0 (iPad; CPU OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148'), { provider: 'apple', device: 'tablet' });
  t.match(parseAgent('Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko)'), { provider: 'apple', device: 'desktop', machine: false }, 'Apple Mail on a Mac');
  t.match(parseAgent('Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15'), { provider: 'other', client: 'Safari', device: 'desktop' }, 'Safari is a browser, not Apple Mail');
  t.match(parseAgent(UA.outlookDesktop), { provider: 'outlook', device: 'desktop', machine: false });
  t.match(parseAgent('Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Thunderbird/115.5.0'), { provider: 'thunderbird', device: 'desktop' });
  t.match(parseAgent(UA.chromeAndroid), { provider: 'other', client: 'Chrome', os: 'Android', device: 'mobile' });
  t.match(parseAgent(UA.chromeWindows), { provider: 'other', client: 'Chrome', os: 'Windows', device: 'desktop' });
  t.match(parseAgent('Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'), { machine: true });
  t.match(parseAgent('python-requests/2.31.0'), { machine: true });
  t.match(parseAgent(''), { provider: 'unknown', device: 'unknown', machine: false });
  t.equal(parseAgent(UA.chromeWindows), parseAgent(UA.chromeWindows), 'parsed once, kept');
});

t.test('a client: the agent, and the country unless a proxy fetched', async (t) => {
  t.match(describeClient('81.2.69.160', UA.chromeWindows), { country: 'GB', provider: 'other', device: 'desktop', machine: false });
  t.match(describeClient('127.0.0.1', UA.chromeWindows), { country: null }, 'loopback: null');
  t.match(describeClient('66.249.84.1', UA.gmailProxy), { country: null, proxy: 'gmail' }, "Gmail's proxy: its address is Google's, not the reader's");
  t.match(describeClient('17.58.1.2', UA.appleMailIphone), { provider: 'apple', proxy: 'apple_mpp', machine: true, country: null }, "from Apple's network: MPP");
  t.match(describeClient('40.107.1.2', UA.chromeWindows), { provider: 'outlook', proxy: 'outlook', machine: true, country: null }, "Microsoft's scanners");
  t.match(describeClient('::ffff:40.107.1.2', UA.chromeWindows), { proxy: 'outlook' }, 'IPv4-mapped too');
});

const ctx = { secrets: new SecretBox(Buffer.alloc(32, 7)) } as unknown as AppContext;
const other = { secrets: new SecretBox(Buffer.alloc(32, 8)) } as unknown as AppContext;

t.test('the token: signed, of one kind, unalterable', async (t) => {
  const claims = { kind: 'click' as const, emailKey: 123456789, recipientKey: 987654321, link: 65535 };
  const token = signTrackingToken(ctx, claims);
  t.equal(token.length, TRACKING_TOKEN_LENGTH);
  t.equal(token.length, 48);
  t.match(token, /^[a-z2-7]{48}$/);
  t.same(readTrackingToken(ctx, 'click', token), claims);
  t.same(readTrackingToken(ctx, 'click', token.toUpperCase()), claims, 'any case');
  t.equal(readTrackingToken(ctx, 'open', token), null, 'a click token is no open token');
  t.equal(readTrackingToken(other, 'click', token), null, "another box's key");
  for (let i = 0; i < token.length; i++) {
    const altered = token.slice(0, i) + (token[i] === 'q' ? 'r' : 'q') + token.slice(i + 1);
    if (readTrackingToken(ctx, 'click', altered) !== null) t.fail(`altered at ${i} still reads`);
  }
  t.pass('every single-character change fails');
  t.equal(readTrackingToken(ctx, 'click', ''), null);
  t.equal(readTrackingToken(ctx, 'click', '!'.repeat(48)), null);
  t.equal(readTrackingToken(ctx, 'click', token + 'a'), null);
  const open = signTrackingToken(ctx, { kind: 'open', emailKey: 1, recipientKey: 0, link: 0 });
  t.same(readTrackingToken(ctx, 'open', open), { kind: 'open', emailKey: 1, recipientKey: 0, link: 0 });
});

t.test('the html: tracked links in order, rewritten, and the pixel', async (t) => {
  const html = [
    '<!DOCTYPE html><html><body>',
    '<a href="https://a.example/x?y=1&amp;z=2">A</a>',
    '<a href="HTTP://B.example">B</a>',
    '<a href="mailto:x@y.example">m</a><a href="#top">t</a><a href="/rel">r</a><a>no href</a><a href="javascript:alert(1)">j</a>',
    '<a href="https://box.example/unsubscribe/tok">u</a><a href="https://x.example/track/open/t">t2</a>',
    '<map><area href="https://c.example/area" alt="c"></map>',
    '<a title="&quot;q&quot;" href="https://d.example/">D</a>',
    '<a href="https://bad host/">bad</a>',
    '</BODY></html>',
  ].join('');
  t.same(trackedLinks(html, keptLink), ['https://a.example/x?y=1&z=2', 'HTTP://B.example', 'https://c.example/area', 'https://d.example/']);
  t.same(linksOf(html), trackedLinks(html, keptLink), 'what a click redirects to');
  const out = rewriteForTracking(html, { pixelUrl: 'https://t.example/o/P', linkUrl: (i) => `https://t.example/c/${i}`, keep: keptLink });
  t.match(out, '<a href="https://t.example/c/0">A</a>');
  t.match(out, '<a href="https://t.example/c/1">B</a>');
  t.match(out, '<area href="https://t.example/c/2" alt="c">');
  t.match(out, '<a title="&quot;q&quot;" href="https://t.example/c/3">D</a>', 'other attributes kept, escaped');
  t.match(out, '<a href="mailto:x@y.example">m</a><a href="#top">t</a><a href="/rel">r</a><a>no href</a>');
  t.match(out, '<a href="https://box.example/unsubscribe/tok">u</a>');
  t.match(out, /<img src="https:\/\/t\.example\/o\/P" width="1" height="1" alt=""[^>]*\/><\/BODY><\/html>$/, 'before </body>, any case');
  t.equal(rewriteForTracking(html, {}), html, 'nothing asked: unchanged');
  t.equal(rewriteForTracking('<p>x</p>', { pixelUrl: 'https://t/p' }).startsWith('<p>x</p><img src="https://t/p"'), true, 'no body: at the end');
  const many = Array.from({ length: 3 }, (_, i) => `<a href="https://e.example/${i}">${i}</a>`).join('');
  t.same(trackedLinks(rewriteForTracking(many, { linkUrl: (i) => `https://t.example/track/click/${i}`, keep: keptLink }), keptLink), [], 'tracked links are not tracked again');
});

t.test('the tracking host', async (t) => {
  const box = { config: { publicUrl: 'https://mail.box.example', hostname: 'mx.box.example' } } as unknown as AppContext;
  t.equal(trackingBaseUrl(box, null), 'https://mail.box.example');
  t.equal(trackingBaseUrl(box, 'track.acme.example'), 'https://track.acme.example');
  const local = { config: { publicUrl: 'http://127.0.0.1:8080', hostname: 'mx' } } as unknown as AppContext;
  t.equal(trackingBaseUrl(local, 'track.acme.example'), 'http://track.acme.example:8080', 'scheme and port of the public URL');
  const bare = { config: { publicUrl: null, hostname: 'mx.box.example' } } as unknown as AppContext;
  t.equal(trackingBaseUrl(bare, null), 'https://mx.box.example');
  t.equal(trackingHostOf('acme.example', 'track', JSON.stringify({ 'TRACKING:track.acme.example': { status: 'verified' } })), 'track.acme.example');
  t.equal(trackingHostOf('acme.example', 'track', JSON.stringify({ 'TRACKING:track.acme.example': { status: 'failed' } })), null, 'not verified: the box');
  t.equal(trackingHostOf('acme.example', 'links', JSON.stringify({ 'TRACKING:track.acme.example': { status: 'verified' } })), null, 'another name verified before');
  t.equal(trackingHostOf('acme.example', null, '{}'), null);
});
