// Client autoconfiguration over real HTTP, without a credential: Thunderbird's config-v1.1.xml at both of
// its paths and Microsoft's Autodiscover POX (POST with the request document, and GET), host and ports from
// the config. The documents are checked structurally (element by element), not as strings.
import t from 'tap';
import { startTestApp, TEST_HOSTNAME } from '../helpers/app.js';
import { autodiscoverRequestAddress, autodiscoverResponse, thunderbirdConfig } from '../../src/services/mailboxes/autoconfig.js';

const PORTS = { hostname: 'mail.example.net', imapPort: 143, imapsPort: 993, pop3Port: 110, pop3sPort: 995, submissionPort: 587, submissionsPort: 465 };

/** The text of every `<name>` element inside each `<block …>…</block>`, in document order. */
function blocks(xml: string, block: string): Array<{ attrs: string; fields: Record<string, string> }> {
  const out: Array<{ attrs: string; fields: Record<string, string> }> = [];
  for (const m of xml.matchAll(new RegExp(`<${block}([^>]*)>([\\s\\S]*?)</${block}>`, 'g'))) {
    const fields: Record<string, string> = {};
    for (const f of m[2]!.matchAll(/<(\w+)>([^<]*)<\/\1>/g)) fields[f[1]!] ??= f[2]!;
    out.push({ attrs: m[1]!.trim(), fields });
  }
  return out;
}

const AUTODISCOVER_REQUEST = (address: string, prefix = '') => `<?xml version="1.0" encoding="utf-8"?>
<${prefix}Autodiscover xmlns${prefix ? `:${prefix.slice(0, -1)}` : ''}="http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006">
  <${prefix}Request>
    <${prefix}EMailAddress>${address}</${prefix}EMailAddress>
    <${prefix}AcceptableResponseSchema>http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a</${prefix}AcceptableResponseSchema>
  </${prefix}Request>
</${prefix}Autodiscover>`;

t.test('documents (pure builders)', async (t) => {
  t.test('Thunderbird: IMAP, POP3 and SMTP, implicit TLS first, the full address as login', async (t) => {
    const xml = thunderbirdConfig(PORTS, 'alice@example.com');
    t.match(xml, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<clientConfig version="1.1">/);
    t.match(xml, /<emailProvider id="example.com">/);
    t.match(xml, /<domain>example.com<\/domain>/);
    const incoming = blocks(xml, 'incomingServer');
    t.same(
      incoming.map((s) => [s.attrs, s.fields.hostname, s.fields.port, s.fields.socketType, s.fields.authentication, s.fields.username]),
      [
        ['type="imap"', 'mail.example.net', '993', 'SSL', 'password-cleartext', '%EMAILADDRESS%'],
        ['type="imap"', 'mail.example.net', '143', 'STARTTLS', 'password-cleartext', '%EMAILADDRESS%'],
        ['type="pop3"', 'mail.example.net', '995', 'SSL', 'password-cleartext', '%EMAILADDRESS%'],
        ['type="pop3"', 'mail.example.net', '110', 'STARTTLS', 'password-cleartext', '%EMAILADDRESS%'],
      ],
    );
    t.same(
      blocks(xml, 'outgoingServer').map((s) => [s.attrs, s.fields.hostname, s.fields.port, s.fields.socketType, s.fields.username]),
      [
        ['type="smtp"', 'mail.example.net', '465', 'SSL', '%EMAILADDRESS%'],
        ['type="smtp"', 'mail.example.net', '587', 'STARTTLS', '%EMAILADDRESS%'],
      ],
    );
    t.match(thunderbirdConfig(PORTS, null), /<emailProvider id="mail.example.net">/, 'no address: the box names the provider');
  });

  t.test('Autodiscover: the request address, and the POX answer', async (t) => {
    t.equal(autodiscoverRequestAddress(AUTODISCOVER_REQUEST('bob@example.com')), 'bob@example.com');
    t.equal(autodiscoverRequestAddress(AUTODISCOVER_REQUEST('bob@example.com', 'a:')), 'bob@example.com', 'namespace prefix');
    t.equal(autodiscoverRequestAddress(AUTODISCOVER_REQUEST('a&amp;b@example.com')), 'a&b@example.com', 'entities decoded');
    t.equal(autodiscoverRequestAddress(AUTODISCOVER_REQUEST('&#x61;&#98;c@example.com')), 'abc@example.com', 'character references decoded');
    t.equal(autodiscoverRequestAddress('<Autodiscover><Request></Request></Autodiscover>'), null);
    t.equal(autodiscoverRequestAddress('garbage \u0000 <<<>>>'), null);

    const xml = autodiscoverResponse(PORTS, 'bob@example.com', new Date('2026-03-01T10:00:00Z'));
    t.match(xml, /<Autodiscover xmlns="http:\/\/schemas.microsoft.com\/exchange\/autodiscover\/responseschema\/2006">/);
    t.match(xml, /<Response xmlns="http:\/\/schemas.microsoft.com\/exchange\/autodiscover\/outlook\/responseschema\/2006a">/);
    t.match(blocks(xml, 'Account')[0]?.fields, { AccountType: 'email', Action: 'settings' });
    t.same(blocks(xml, 'Protocol')[0]?.fields, { Type: 'IMAP', Server: 'mail.example.net', Port: '993', DomainRequired: 'off', LoginName: 'bob@example.com', SPA: 'off', SSL: 'on', AuthRequired: 'on' });
    t.same(
      blocks(xml, 'Protocol').map((p) => [p.fields.Type, p.fields.Server, p.fields.Port, p.fields.SSL, p.fields.Encryption ?? null, p.fields.LoginName]),
      [
        ['IMAP', 'mail.example.net', '993', 'on', null, 'bob@example.com'],
        ['POP3', 'mail.example.net', '995', 'on', null, 'bob@example.com'],
        ['SMTP', 'mail.example.net', '465', 'on', null, 'bob@example.com'],
        ['SMTP', 'mail.example.net', '587', 'off', 'TLS', 'bob@example.com'],
      ],
    );
    const error = autodiscoverResponse(PORTS, null, new Date('2026-03-01T10:00:00Z'));
    t.match(error, /<ErrorCode>600<\/ErrorCode>/);
    t.match(error, /<Message>Invalid Request<\/Message>/);
    t.notMatch(error, /<Protocol>/);
  });

  t.test('values are escaped', async (t) => {
    const xml = thunderbirdConfig({ ...PORTS, hostname: 'a&b<c' }, null);
    t.match(xml, /<hostname>a&amp;b&lt;c<\/hostname>/);
    t.notMatch(xml, /a&b/);
  });
});

t.test('served by the API listener without a credential', async (t) => {
  const app = await startTestApp(t);
  const cfg = app.appliance.ctx.config;
  const get = (path: string, init: RequestInit = {}) => fetch(`${app.url}${path}`, init);

  for (const path of ['/.well-known/autoconfig/mail/config-v1.1.xml', '/mail/config-v1.1.xml']) {
    t.test(`GET ${path}`, async (t) => {
      const res = await get(`${path}?emailaddress=${encodeURIComponent('Carol@Example.COM')}`);
      t.equal(res.status, 200);
      t.match(res.headers.get('content-type'), /^application\/xml/);
      const xml = await res.text();
      t.match(xml, /<emailProvider id="example.com">/, 'the domain of the address, normalised');
      const imap = blocks(xml, 'incomingServer')[0]!;
      t.same([imap.fields.hostname, imap.fields.port], [TEST_HOSTNAME, String(cfg.imapsPort)], 'host and ports from the config');
      t.same(
        blocks(xml, 'outgoingServer').map((s) => s.fields.port),
        [String(cfg.submissionsPort), String(cfg.submissionPort)],
      );

      const bare = await get(path);
      t.equal(bare.status, 200);
      t.match(await bare.text(), new RegExp(`<emailProvider id="${TEST_HOSTNAME.replace(/\./g, '\\.')}">`));

      const bad = await get(`${path}?emailaddress=not-an-address`);
      t.equal(bad.status, 400);
      t.same(await bad.json(), { error: 'emailaddress: must be a valid email address', code: 'invalid_request' });
    });
  }

  t.test('POST /autodiscover/autodiscover.xml (and Outlook\'s capitalised path)', async (t) => {
    for (const path of ['/autodiscover/autodiscover.xml', '/Autodiscover/Autodiscover.xml']) {
      const res = await get(path, { method: 'POST', headers: { 'content-type': 'text/xml' }, body: AUTODISCOVER_REQUEST('dave@example.org') });
      t.equal(res.status, 200, path);
      t.match(res.headers.get('content-type'), /^text\/xml/);
      const xml = await res.text();
      const protocols = blocks(xml, 'Protocol');
      t.same(
        protocols.map((p) => [p.fields.Type, p.fields.Server, p.fields.Port, p.fields.LoginName]),
        [
          ['IMAP', TEST_HOSTNAME, String(cfg.imapsPort), 'dave@example.org'],
          ['POP3', TEST_HOSTNAME, String(cfg.pop3sPort), 'dave@example.org'],
          ['SMTP', TEST_HOSTNAME, String(cfg.submissionsPort), 'dave@example.org'],
          ['SMTP', TEST_HOSTNAME, String(cfg.submissionPort), 'dave@example.org'],
        ],
      );
    }
  });

  t.test('Autodiscover without a usable address: error 600, never a 500', async (t) => {
    for (const body of ['', '<Autodiscover/>', AUTODISCOVER_REQUEST('nope'), '\u0000\u0001 not xml']) {
      const res = await get('/autodiscover/autodiscover.xml', { method: 'POST', body });
      t.equal(res.status, 200, JSON.stringify(body));
      t.match(await res.text(), /<ErrorCode>600<\/ErrorCode>/);
    }
    const big = await get('/autodiscover/autodiscover.xml', { method: 'POST', body: 'x'.repeat(70 * 1024) });
    t.equal(big.status, 413);
    t.equal(((await big.json()) as { code: string }).code, 'payload_too_large');
  });

  t.test('GET /autodiscover/autodiscover.xml?email=…', async (t) => {
    const res = await get('/autodiscover/autodiscover.xml?email=erin%40example.com');
    t.equal(res.status, 200);
    t.same(blocks(await res.text(), 'Protocol')[0]?.fields.LoginName, 'erin@example.com');
  });
});
