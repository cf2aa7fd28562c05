// Sending domains over real HTTP: create (with its DKIM key pair), list, get, patch, delete, verify
// against a real DNS server on loopback, plan caps, tenant isolation, key permissions and events.
import t from 'tap';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { createOtherTeam, startTestApp, testConfig, TEST_HOSTNAME, type RequestOptions, type TestResponse } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { srvValue } from '../helpers/domains.js';
import { DB_FILE } from '../../src/db/index.js';

interface DnsRecord {
  record: 'SPF' | 'DKIM' | 'DMARC' | 'MX' | 'SRV';
  type: 'TXT' | 'MX' | 'CNAME' | 'SRV';
  name: string;
  value: string;
  priority?: number;
  ttl: string;
  required: boolean;
  status: 'pending' | 'verified' | 'failed';
  reason?: string;
  zone_file_line?: string;
}

interface Domain {
  id: string;
  name: string;
  status: 'pending' | 'verified' | 'failed';
  region: string;
  open_tracking: boolean;
  click_tracking: boolean;
  tls_mode: string;
  dns_records: DnsRecord[];
  mail_client_records: DnsRecord[];
  created_at: string;
  verified_at: string | null;
  last_checked_at: string | null;
}

interface ErrorBody {
  error: string;
  code: string;
}

interface EventItem {
  id: number;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

const SPF_VALUE = `v=spf1 a:${TEST_HOSTNAME} ~all`;
const FORBIDDEN = { error: 'API key does not have permission', code: 'forbidden' };

t.test('a typed dnsServers override (Partial<Config>) is accepted by the test config', async (t) => {
  t.same(testConfig({ dnsServers: [{ host: '127.0.0.1', port: 5353 }] }).dnsServers, [{ host: '127.0.0.1', port: 5353 }]);
});

t.test('sending domains', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  t.same(app.appliance.ctx.config.dnsServers, [dns.server], 'the box resolves through the loopback server');
  // The box's own name resolves, so SPF is evaluated (by mailauth) from this address.
  dns.set('A', TEST_HOSTNAME, ['127.0.0.1']);

  // Every response body the API sent, to prove no private key material ever left the box.
  const seen: string[] = [];
  async function req<T = Record<string, unknown>>(method: string, urlPath: string, opts?: RequestOptions): Promise<TestResponse<T>> {
    const res = await app.request<T>(method, urlPath, opts);
    seen.push(res.text);
    return res;
  }

  let counter = 0;
  const uniqueName = (label: string) => `${label}-${++counter}.example`;

  async function create(name: string, extra: Record<string, unknown> = {}, key?: string): Promise<Domain> {
    const res = await req<Domain>('POST', '/domains', { body: { name, ...extra }, ...(key ? { key } : {}) });
    if (res.status !== 201) throw new Error(`create ${name}: ${res.status} ${res.text}`);
    return res.body;
  }

  async function events(type: string, key?: string): Promise<EventItem[]> {
    const res = await req<{ data: EventItem[] }>('GET', `/events?type=${type}&per_page=100`, key ? { key } : {});
    if (res.status !== 200) throw new Error(`events ${type}: ${res.status} ${res.text}`);
    return res.body.data;
  }

  const recordOf = (d: Domain, kind: DnsRecord['record']) => {
    const r = d.dns_records.find((x) => x.record === kind);
    if (!r) throw new Error(`no ${kind} record in ${JSON.stringify(d.dns_records)}`);
    return r;
  };

  /** Publishes the records a domain asks for (each part can be left out or replaced). */
  function publish(d: Domain, parts: { spf?: string[] | null; dkim?: string[] | null; dmarc?: string[] | null; mx?: boolean } = {}) {
    const spf = parts.spf === undefined ? [SPF_VALUE] : parts.spf;
    const dkim = parts.dkim === undefined ? [recordOf(d, 'DKIM').value] : parts.dkim;
    const dmarc = parts.dmarc === undefined ? [recordOf(d, 'DMARC').value] : parts.dmarc;
    if (spf) dns.set('TXT', d.name, spf);
    if (dkim) dns.set('TXT', recordOf(d, 'DKIM').name, dkim);
    if (dmarc) dns.set('TXT', recordOf(d, 'DMARC').name, dmarc);
    if (parts.mx !== false) dns.set('MX', d.name, [{ exchange: TEST_HOSTNAME, priority: 10 }]);
    for (const r of d.mail_client_records) dns.set('SRV', r.name, [srvValue(r)]);
  }

  async function verify(d: Domain, key?: string): Promise<Domain> {
    const res = await req<Domain>('POST', `/domains/${d.id}/verify`, key ? { key } : {});
    if (res.status !== 200) throw new Error(`verify ${d.name}: ${res.status} ${res.text}`);
    return res.body;
  }

  t.test('POST /domains creates a pending domain with its DNS records', async (t) => {
    const before = app.clock.now().toISOString();
    const res = await req<Domain>('POST', '/domains', { body: { name: 'create-basic.example' } });
    t.equal(res.status, 201);
    const d = res.body;
    t.match(d.id, /^\S{8,}$/);
    t.equal(d.name, 'create-basic.example');
    t.equal(d.status, 'pending');
    t.equal(d.region, 'eu-west-1');
    t.equal(d.open_tracking, false);
    t.equal(d.click_tracking, false);
    t.equal(d.tls_mode, 'opportunistic');
    t.equal(d.created_at, before, 'created_at comes from the clock');
    t.equal(d.verified_at, null);
    t.equal(d.last_checked_at, null);

    t.same(
      d.dns_records.map((r) => r.record),
      ['SPF', 'DKIM', 'DMARC', 'MX'],
      'dns_records keeps to the spec’s types: TXT and MX',
    );
    t.ok(d.dns_records.every((r) => r.type === 'TXT' || r.type === 'MX'));
    t.same(d.mail_client_records.map((r) => r.record), ['SRV', 'SRV', 'SRV', 'SRV'], 'the mail clients’ SRV records in their own field');
    for (const r of d.dns_records) {
      t.equal(r.status, 'pending', `${r.record} starts pending`);
      t.notOk(r.reason, `${r.record} has no reason yet`);
    }

    const spf = recordOf(d, 'SPF');
    t.match(spf, { type: 'TXT', name: 'create-basic.example', value: SPF_VALUE, required: true });
    t.ok(spf.value.includes(TEST_HOSTNAME), 'SPF names the box');

    const dkim = recordOf(d, 'DKIM');
    t.equal(dkim.type, 'TXT');
    t.equal(dkim.required, true);
    const m = /^([a-z0-9]+)\._domainkey\.create-basic\.example$/.exec(dkim.name);
    t.ok(m, `DKIM name is <selector>._domainkey.<name>: ${dkim.name}`);
    const vm = /^v=DKIM1; k=rsa; p=([A-Za-z0-9+/]+={0,2})$/.exec(dkim.value);
    t.ok(vm, 'DKIM value is v=DKIM1; k=rsa; p=<base64>');
    const key = createPublicKey({ key: Buffer.from(vm![1]!, 'base64'), format: 'der', type: 'spki' });
    t.equal(key.asymmetricKeyType, 'rsa');
    t.equal(key.asymmetricKeyDetails?.modulusLength, 2048, 'RSA 2048');

    t.match(recordOf(d, 'DMARC'), { type: 'TXT', name: '_dmarc.create-basic.example', required: false });
    t.match(recordOf(d, 'DMARC').value, /^v=DMARC1; p=(none|quarantine|reject)/);
    t.match(recordOf(d, 'MX'), { type: 'MX', name: 'create-basic.example', value: TEST_HOSTNAME, priority: 10, required: false });

    const got = await req<Domain>('GET', `/domains/${d.id}`);
    t.equal(got.status, 200);
    t.same(got.body, d, 'GET returns the same domain');

    const second = await create('create-basic-2.example');
    t.not(recordOf(second, 'DKIM').value, dkim.value, 'each domain gets its own key');
  });

  t.test('POST /domains takes the optional settings', async (t) => {
    const d = await create('create-options.example', { region: 'eu-west-1', open_tracking: true, click_tracking: true, tls_mode: 'enforced' });
    t.match(d, { region: 'eu-west-1', open_tracking: true, click_tracking: true, tls_mode: 'enforced', status: 'pending' });
    const got = await req<Domain>('GET', `/domains/${d.id}`);
    t.match(got.body, { open_tracking: true, click_tracking: true, tls_mode: 'enforced' });
  });

  t.test("Resend's `tls` is read as tls_mode (its SDKs send it); tls_mode wins when both are given", async (t) => {
    const d = await create('create-tls-alias.example', { tls: 'enforced' });
    t.equal(d.tls_mode, 'enforced');
    t.notOk('tls' in d, 'answers name the spec’s field only');
    const both = await create('create-tls-both.example', { tls: 'enforced', tls_mode: 'opportunistic' });
    t.equal(both.tls_mode, 'opportunistic');
    const bad = await req<ErrorBody>('POST', '/domains', { body: { name: 'create-tls-bad.example', tls: 'strict' } });
    t.same(bad.body, { error: 'tls: must be one of opportunistic, enforced', code: 'invalid_request' });
    const patched = await req('PATCH', `/domains/${both.id}`, { body: { tls: 'enforced' } });
    t.same(patched.body, { success: true });
    t.equal((await req<Domain>('GET', `/domains/${both.id}`)).body.tls_mode, 'enforced');
  });

  t.test('POST /domains: missing or invalid fields answer 400 invalid_request and create nothing', async (t) => {
    const createdBefore = (await events('domain.created')).length;
    const listBefore = (await req<{ domains: Domain[] }>('GET', '/domains')).body.domains.length;

    for (const opts of [{ body: {} }, { body: { region: 'eu-west-1', tls_mode: 'enforced' } }, {}] as RequestOptions[]) {
      const res = await req<ErrorBody>('POST', '/domains', opts);
      t.equal(res.status, 400, JSON.stringify(opts));
      t.same(res.body, { error: 'Request body is missing required fields: name', code: 'invalid_request' });
    }

    const badNames = [
      'nodot',
      'localhost',
      '192.168.1.1',
      '[::1]',
      'exa mple.com',
      ' spaced .example',
      'a..b',
      '.leading.example',
      `${'a'.repeat(64)}.example`,
      'http://x.com',
      'x.com/path',
      'user@x.com',
      'x.com:25',
      '-bad.example',
      'under_score.example',
      '*.wild.example',
      '',
      '   ',
      `${'a'.repeat(250)}.com`,
    ];
    for (const name of badNames) {
      const res = await req<ErrorBody>('POST', '/domains', { body: { name } });
      t.equal(res.status, 400, `name ${JSON.stringify(name)}`);
      t.equal(res.body.code, 'invalid_request');
      t.match(res.body.error, /^name: /, 'the message names the field');
    }
    t.same((await req('POST', '/domains', { body: { name: 'a..b' } })).body, { error: 'name: must be a valid domain name', code: 'invalid_request' });

    const badOthers: Array<[Record<string, unknown>, RegExp]> = [
      [{ name: 123 }, /^name: must be a string$/],
      [{ name: ['x.example'] }, /^name: /],
      [{ name: 'region.example', region: 'us-east-1' }, /^region: must be eu-west-1/],
      [{ name: 'region.example', region: 'EU-WEST-1' }, /^region: /],
      [{ name: 'region.example', region: '' }, /^region: /],
      [{ name: 'tls.example', tls_mode: 'strict' }, /^tls_mode: must be one of opportunistic, enforced$/],
      [{ name: 'tls.example', tls_mode: 1 }, /^tls_mode: /],
      [{ name: 'track.example', open_tracking: 'true' }, /^open_tracking: must be a boolean$/],
      [{ name: 'track.example', click_tracking: 1 }, /^click_tracking: must be a boolean$/],
      [{ name: 'track.example', open_tracking: null }, /^open_tracking: /],
    ];
    for (const [body, message] of badOthers) {
      const res = await req<ErrorBody>('POST', '/domains', { body });
      t.equal(res.status, 400, JSON.stringify(body));
      t.equal(res.body.code, 'invalid_request');
      t.match(res.body.error, message, JSON.stringify(body));
    }

    t.equal((await events('domain.created')).length, createdBefore, 'no domain.created event for a refused request');
    t.equal((await req<{ domains: Domain[] }>('GET', '/domains')).body.domains.length, listBefore, 'no domain created');
  });

  t.test('POST /domains: 253 characters is the longest name, with or without the root dot', async (t) => {
    const name = (c: string) => `${c.repeat(63)}.${c.repeat(63)}.${c.repeat(63)}.${c.repeat(61)}`;
    t.equal(name('a').length, 253);
    const longest = await req<Domain>('POST', '/domains', { body: { name: name('a') } });
    t.equal(longest.status, 201);
    t.equal(longest.body.name, name('a'));
    const tooLong = await req<ErrorBody>('POST', '/domains', { body: { name: `${name('c')}c` } });
    t.equal(tooLong.status, 400);
    // The same 253-character name written as an FQDN (with the trailing dot normalisation drops) is 254
    // characters long and still valid.
    const fqdn = await req<Domain>('POST', '/domains', { body: { name: `${name('b')}.` } });
    t.equal(fqdn.status, 201);
  });

  t.test('POST /domains normalises the name: case, trailing dot, IDN to punycode', async (t) => {
    const idn = await create('Bücher.Example.');
    t.equal(idn.name, 'xn--bcher-kva.example');
    t.equal(recordOf(idn, 'SPF').name, 'xn--bcher-kva.example');
    t.match(recordOf(idn, 'DKIM').name, /\._domainkey\.xn--bcher-kva\.example$/);
    t.equal(recordOf(idn, 'DMARC').name, '_dmarc.xn--bcher-kva.example');

    const upper = await create('  MiXeD.Case.EXAMPLE.  ');
    t.equal(upper.name, 'mixed.case.example');

    const punyDup = await req<ErrorBody>('POST', '/domains', { body: { name: 'xn--bcher-kva.example' } });
    t.equal(punyDup.status, 409, 'the punycode spelling is the same domain');
    const uniDup = await req<ErrorBody>('POST', '/domains', { body: { name: 'BÜCHER.example' } });
    t.equal(uniDup.status, 409, 'so is another Unicode spelling');
  });

  t.test('duplicate names: 409 conflict, whatever the case and whichever team', async (t) => {
    const d = await create('dup.example');
    const createdBefore = (await events('domain.created')).length;
    for (const name of ['dup.example', 'DUP.Example', 'dup.example.']) {
      const res = await req<ErrorBody>('POST', '/domains', { body: { name } });
      t.equal(res.status, 409, name);
      t.same(res.body, { error: "Domain 'dup.example' already exists", code: 'conflict' });
    }
    const other = await createOtherTeam(app);
    const res = await req<ErrorBody>('POST', '/domains', { body: { name: 'Dup.Example' }, key: other.apiKey });
    t.equal(res.status, 409, 'another team cannot take the name either');
    t.equal(res.body.code, 'conflict');
    t.equal((await events('domain.created')).length, createdBefore, 'no event for a refused duplicate');
    t.same((await events('domain.created', other.apiKey)).length, 0, "the other team's log has no domain.created either");
    t.equal((await req<Domain>('GET', `/domains/${d.id}`)).body.name, 'dup.example', 'the original is untouched');
  });

  t.test('plan cap: the free plan allows one domain, the second answers 403 forbidden', async (t) => {
    const free = await createOtherTeam(app, 'free');
    const first = await create(uniqueName('free'), {}, free.apiKey);
    const res = await req<ErrorBody>('POST', '/domains', { body: { name: uniqueName('free') }, key: free.apiKey });
    t.equal(res.status, 403);
    t.equal(res.body.code, 'forbidden');
    t.match(res.body.error, /free/);
    t.match(res.body.error, /\b1\b/, 'the message names the limit');
    t.equal(res.body.error, 'Domain limit reached: the free plan allows 1 domain', 'in the singular for one');
    const list = await req<{ domains: Domain[] }>('GET', '/domains', { key: free.apiKey });
    t.same(
      list.body.domains.map((d) => d.id),
      [first.id],
    );

    // Deleting frees the slot again.
    t.equal((await req('DELETE', `/domains/${first.id}`, { key: free.apiKey })).status, 200);
    t.equal((await req('POST', '/domains', { body: { name: uniqueName('free') }, key: free.apiKey })).status, 201);

    // A starter team gets three.
    const starter = await createOtherTeam(app, 'starter');
    for (let i = 0; i < 3; i++) await create(uniqueName('starter'), {}, starter.apiKey);
    t.equal((await req('POST', '/domains', { body: { name: uniqueName('starter') }, key: starter.apiKey })).status, 403);
  });

  t.test('the DKIM private key is never returned and is stored sealed', async (t) => {
    const d = await create('sealed.example');
    const db = app.appliance.ctx.db;
    const rows = await db('dkim_keys').where({ domain_id: d.id });
    t.equal(rows.length, 1, 'one key per new domain');
    const row = rows[0] as { selector: string; public_key: string; private_key_sealed: string; state: string };
    t.equal(row.state, 'active');
    t.equal(`${row.selector}._domainkey.sealed.example`, recordOf(d, 'DKIM').name);
    t.equal(`v=DKIM1; k=rsa; p=${row.public_key}`, recordOf(d, 'DKIM').value);
    t.notMatch(row.private_key_sealed, /PRIVATE KEY/);
    t.notMatch(row.private_key_sealed, /^MII/, 'not bare base64 DER either');

    // The sealed value opens, with the box's master key, to the private half of the published key.
    const pem = app.appliance.ctx.secrets.open(row.private_key_sealed);
    t.match(pem, /^-----BEGIN PRIVATE KEY-----/);
    const derived = createPublicKey(pem).export({ type: 'spki', format: 'der' }).toString('base64');
    t.equal(derived, row.public_key, 'the stored private key matches the published public key');

    // Nothing plaintext on disk either (the database file and its WAL).
    await db.raw('PRAGMA wal_checkpoint(PASSIVE)');
    for (const file of [DB_FILE, `${DB_FILE}-wal`]) {
      const p = path.join(app.dataDir, file);
      if (existsSync(p)) t.notOk(readFileSync(p).includes('PRIVATE KEY'), `${file} holds no plaintext private key`);
    }

    const list = await req('GET', '/domains');
    const one = await req('GET', `/domains/${d.id}`);
    for (const text of [list.text, one.text]) {
      t.notMatch(text, /PRIVATE/);
      t.notMatch(text, /private/i);
    }
  });

  t.test('GET /domains lists the team\'s domains newest first', async (t) => {
    const team = await createOtherTeam(app);
    const empty = await req<{ domains: Domain[] }>('GET', '/domains', { key: team.apiKey });
    t.equal(empty.status, 200);
    t.same(empty.body, { domains: [] });

    const made: Domain[] = [];
    for (const label of ['first', 'second', 'third']) {
      made.push(await create(uniqueName(label), {}, team.apiKey));
      app.clock.advance(1000);
    }
    const res = await req<{ domains: Domain[] }>('GET', '/domains', { key: team.apiKey });
    t.equal(res.status, 200);
    t.same(Object.keys(res.body), ['domains'], 'unpaginated: no data/meta wrapper');
    t.same(
      res.body.domains.map((d) => d.id),
      made.map((d) => d.id).reverse(),
      'newest first',
    );
    t.same(res.body.domains[2], made[0], 'each item is the full Domain');
    t.ok(res.body.domains.every((d) => d.dns_records.length === 4 && d.mail_client_records.length === 4));
  });

  t.test('GET /domains: domains created at the same instant are still newest first', async (t) => {
    // With a real clock two creates in one millisecond are ordinary (scripts, retries). listDomains breaks the
    // created_at tie on the random UUID, so the order of such domains is random. 5 domains: right by chance 1/120.
    const team = await createOtherTeam(app);
    const made: Domain[] = [];
    for (let i = 0; i < 5; i++) made.push(await create(uniqueName('same-instant'), {}, team.apiKey));
    const res = await req<{ domains: Domain[] }>('GET', '/domains', { key: team.apiKey });
    t.same(
      res.body.domains.map((d) => d.name),
      made.map((d) => d.name).reverse(),
    );
  });

  t.test('GET /domains/{id}: unknown id answers 404 not_found', async (t) => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'nope', 'create-basic.example']) {
      const res = await req<ErrorBody>('GET', `/domains/${id}`);
      t.equal(res.status, 404, id);
      t.equal(res.body.code, 'not_found');
      t.type(res.body.error, 'string');
    }
  });

  t.test('PATCH /domains/{id} changes the settings', async (t) => {
    const d = await create('patch.example');
    app.clock.advance(5000);

    const one = await req('PATCH', `/domains/${d.id}`, { body: { open_tracking: true } });
    t.equal(one.status, 200);
    t.same(one.body, { success: true });
    let got = (await req<Domain>('GET', `/domains/${d.id}`)).body;
    t.match(got, { open_tracking: true, click_tracking: false, tls_mode: 'opportunistic', status: 'pending', name: 'patch.example' });

    const two = await req('PATCH', `/domains/${d.id}`, { body: { click_tracking: true, tls_mode: 'enforced', open_tracking: false } });
    t.same(two.body, { success: true });
    got = (await req<Domain>('GET', `/domains/${d.id}`)).body;
    t.match(got, { open_tracking: false, click_tracking: true, tls_mode: 'enforced' });

    // Fields that are not settings are ignored: the name, status and records stay.
    const three = await req('PATCH', `/domains/${d.id}`, { body: { tls_mode: 'opportunistic', name: 'hijack.example', status: 'verified', region: 'us-east-1' } });
    t.equal(three.status, 200);
    got = (await req<Domain>('GET', `/domains/${d.id}`)).body;
    t.match(got, { name: 'patch.example', status: 'pending', region: 'eu-west-1', tls_mode: 'opportunistic' });
    t.same(got.dns_records, d.dns_records, 'records unchanged');
    t.equal(got.created_at, d.created_at);

    // The update events, newest first, each carrying the change.
    const updated = (await events('domain.updated')).filter((e) => e.data.id === d.id);
    t.equal(updated.length, 3);
    t.match(updated[2]!.data, { id: d.id, name: 'patch.example', open_tracking: true, changes: { open_tracking: true } });
    t.match(updated[1]!.data, { changes: { click_tracking: true, tls_mode: 'enforced', open_tracking: false } });
    t.same(updated[0]!.data.changes, { tls_mode: 'opportunistic' });
    t.equal(updated[2]!.created_at, app.clock.now().toISOString());
  });

  t.test('PATCH /domains/{id}: empty body, bad types, unknown id', async (t) => {
    const d = await create('patch-errors.example');
    const updatedBefore = (await events('domain.updated')).length;

    for (const opts of [{ body: {} }, {}, { body: { name: 'x.example' } }] as RequestOptions[]) {
      const res = await req<ErrorBody>('PATCH', `/domains/${d.id}`, opts);
      t.equal(res.status, 400, JSON.stringify(opts));
      t.equal(res.body.code, 'invalid_request');
      t.match(res.body.error, /open_tracking, click_tracking, tls_mode/, 'names the settings it takes');
    }
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ open_tracking: 'yes' }, /^open_tracking: must be a boolean$/],
      [{ open_tracking: 1 }, /^open_tracking: must be a boolean$/],
      [{ click_tracking: null }, /^click_tracking: /],
      [{ tls_mode: 'strict' }, /^tls_mode: must be one of opportunistic, enforced$/],
      [{ tls_mode: true }, /^tls_mode: /],
      [{ open_tracking: true, tls_mode: 'bogus' }, /^tls_mode: /],
    ];
    for (const [body, message] of bad) {
      const res = await req<ErrorBody>('PATCH', `/domains/${d.id}`, { body });
      t.equal(res.status, 400, JSON.stringify(body));
      t.equal(res.body.code, 'invalid_request');
      t.match(res.body.error, message);
    }
    const raw = await req<ErrorBody>('PATCH', `/domains/${d.id}`, { raw: '{"open_tracking": tru' });
    t.equal(raw.status, 400);
    t.equal(raw.body.code, 'invalid_request');

    const got = (await req<Domain>('GET', `/domains/${d.id}`)).body;
    t.match(got, { open_tracking: false, click_tracking: false, tls_mode: 'opportunistic' }, 'nothing applied by a refused PATCH (not even partly)');
    t.equal((await events('domain.updated')).length, updatedBefore, 'no domain.updated for a refused PATCH');

    const missing = await req<ErrorBody>('PATCH', '/domains/00000000-0000-4000-8000-000000000000', { body: { open_tracking: true } });
    t.equal(missing.status, 404);
    t.equal(missing.body.code, 'not_found');
  });

  t.test('DELETE /domains/{id}', async (t) => {
    const d = await create('delete-me.example');
    const del = await req('DELETE', `/domains/${d.id}`);
    t.equal(del.status, 200);
    t.same(del.body, { success: true });

    t.equal((await req('GET', `/domains/${d.id}`)).status, 404, 'gone');
    t.equal((await req('PATCH', `/domains/${d.id}`, { body: { open_tracking: true } })).status, 404);
    t.equal((await req('POST', `/domains/${d.id}/verify`)).status, 404);
    const again = await req<ErrorBody>('DELETE', `/domains/${d.id}`);
    t.equal(again.status, 404, 'a second delete is 404');
    t.equal(again.body.code, 'not_found');
    t.notOk((await req<{ domains: Domain[] }>('GET', '/domains')).body.domains.some((x) => x.id === d.id), 'not listed');
    t.same(await app.appliance.ctx.db('dkim_keys').where({ domain_id: d.id }), [], 'its keys are deleted too');

    const deleted = (await events('domain.deleted')).filter((e) => e.data.id === d.id);
    t.equal(deleted.length, 1, 'one domain.deleted event (none for the refused second delete)');
    t.same(deleted[0]!.data, { id: d.id, name: 'delete-me.example' });

    const back = await req<Domain>('POST', '/domains', { body: { name: 'Delete-Me.example' } });
    t.equal(back.status, 201, 'the name can be added again');
    t.not(back.body.id, d.id, 'as a new domain');
    t.equal(back.body.status, 'pending');
    t.not(recordOf(back.body, 'DKIM').value, recordOf(d, 'DKIM').value, 'with a new key');
  });

  t.test("tenant isolation: another team's key sees none of it", async (t) => {
    const d = await create('isolated.example');
    const other = await createOtherTeam(app);
    const key = other.apiKey;

    for (const [method, p, body] of [
      ['GET', `/domains/${d.id}`, undefined],
      ['PATCH', `/domains/${d.id}`, { open_tracking: true, tls_mode: 'enforced' }],
      ['POST', `/domains/${d.id}/verify`, undefined],
      ['DELETE', `/domains/${d.id}`, undefined],
    ] as const) {
      const res = await req<ErrorBody>(method, p, { key, ...(body ? { body } : {}) });
      t.equal(res.status, 404, `${method} ${p}`);
      t.equal(res.body.code, 'not_found');
    }
    const list = await req<{ domains: Domain[] }>('GET', '/domains', { key });
    t.same(list.body, { domains: [] }, 'not in its list');

    const mine = await req<Domain>('GET', `/domains/${d.id}`);
    t.equal(mine.status, 200, 'still there for its owner');
    t.match(mine.body, { open_tracking: false, tls_mode: 'opportunistic', status: 'pending', last_checked_at: null }, 'and untouched');

    for (const type of ['domain.created', 'domain.updated', 'domain.deleted', 'domain.verified', 'domain.failed']) {
      t.same(await events(type, key), [], `no ${type} in the other team's log`);
    }

    // And the other way round: the first team cannot reach the other team's domain.
    const theirs = await create('theirs.example', {}, key);
    t.equal((await req('GET', `/domains/${theirs.id}`)).status, 404);
    t.equal((await req('DELETE', `/domains/${theirs.id}`)).status, 404);
    t.equal((await req('GET', `/domains/${theirs.id}`, { key })).status, 200);
  });

  t.test('a test-mode key adds and verifies domains but cannot delete one (it serves live sending too)', async (t) => {
    const made = await req<{ token: string }>('POST', '/api-keys', { body: { name: 'ci', permission: 'full_access', mode: 'test' } });
    t.equal(made.status, 201);
    const key = made.body.token;
    const live = await create(uniqueName('live-domain'));
    const del = await req<ErrorBody>('DELETE', `/domains/${live.id}`, { key });
    t.equal(del.status, 403);
    t.same(del.body, { error: 'A test-mode API key cannot delete domains: a domain serves live sending too', code: 'forbidden' });
    t.equal((await req('GET', `/domains/${live.id}`)).status, 200, 'the domain is still there');
    t.same((await events('domain.deleted')).filter((e) => e.data.id === live.id), [], 'no domain.deleted event');

    const own = await req<Domain>('POST', '/domains', { body: { name: uniqueName('by-test-key') }, key });
    t.equal(own.status, 201, 'it adds a domain');
    t.equal((await req('POST', `/domains/${own.body.id}/verify`, { key })).status, 200, 'and verifies it');
    t.equal((await req('DELETE', `/domains/${own.body.id}`, { key })).status, 403, 'but does not delete it');
    t.equal((await req('DELETE', '/domains/00000000-0000-4000-8000-000000000000', { key })).status, 404, 'an unknown id stays 404');
    t.equal((await req('DELETE', `/domains/${own.body.id}`)).status, 200, 'a live key deletes it');
  });

  t.test('a sending_access key gets 403 on every domain endpoint', async (t) => {
    const d = await create('sending-key.example');
    const made = await req<{ token: string; permission: string }>('POST', '/api-keys', { body: { name: 'sender', permission: 'sending_access' } });
    t.equal(made.status, 201);
    t.equal(made.body.permission, 'sending_access');
    const key = made.body.token;
    t.match(key, /^sk_live_/);

    for (const [method, p, body] of [
      ['GET', '/domains', undefined],
      ['POST', '/domains', { name: 'by-sender.example' }],
      ['GET', `/domains/${d.id}`, undefined],
      ['PATCH', `/domains/${d.id}`, { open_tracking: true }],
      ['DELETE', `/domains/${d.id}`, undefined],
      ['POST', `/domains/${d.id}/verify`, undefined],
      ['GET', '/domains/00000000-0000-4000-8000-000000000000', undefined],
    ] as const) {
      const res = await req(method, p, { key, ...(body ? { body } : {}) });
      t.equal(res.status, 403, `${method} ${p}`);
      t.same(res.body, FORBIDDEN);
    }
    const still = await req<Domain>('GET', `/domains/${d.id}`);
    t.equal(still.status, 200, 'nothing was deleted');
    t.equal(still.body.open_tracking, false, 'nothing was changed');
    t.equal((await req('POST', '/domains', { body: { name: 'by-sender.example' } })).status, 201, 'nothing was created');
  });

  t.test('events: domain.created carries the domain', async (t) => {
    const d = await create('events.example');
    const created = (await events('domain.created')).filter((e) => e.data.id === d.id);
    t.equal(created.length, 1);
    t.equal(created[0]!.type, 'domain.created');
    t.equal(created[0]!.created_at, d.created_at);
    t.match(created[0]!.data, { id: d.id, name: 'events.example', status: 'pending' });
    t.same(created[0]!.data.dns_records, d.dns_records, 'with the records to publish');
    t.notMatch(JSON.stringify(created[0]), /PRIVATE/);

    // The unfiltered log carries the same event.
    const all = await req<{ data: EventItem[] }>('GET', '/events?per_page=100');
    t.ok(all.body.data.some((e) => e.id === created[0]!.id && e.type === 'domain.created'));
  });

  t.test('verify: every record published correctly → verified', async (t) => {
    const d = await create('verify-ok.example');
    const dkim = recordOf(d, 'DKIM');
    t.ok(dkim.value.length > 255, 'the DKIM value is longer than one TXT string, so the server sends it split');
    publish(d, { spf: ['google-site-verification=abc123', SPF_VALUE] });
    dns.queries.length = 0;
    app.clock.advance(60_000);
    const at = app.clock.now().toISOString();

    const v = await verify(d);
    t.equal(v.status, 'verified', JSON.stringify(v.dns_records));
    for (const r of v.dns_records) {
      t.equal(r.status, 'verified', `${r.record} verified`);
      t.notOk(r.reason, `${r.record} has no reason`);
    }
    t.equal(v.verified_at, at);
    t.equal(v.last_checked_at, at);
    t.same(
      v.dns_records.map(({ status: _s, ...rest }) => rest),
      d.dns_records.map(({ status: _s, ...rest }) => rest),
      'the records themselves do not change',
    );

    // The DNS server really was asked, through the configured resolver.
    for (const q of [`TXT verify-ok.example`, `TXT ${dkim.name}`, `TXT _dmarc.verify-ok.example`, `MX verify-ok.example`, `A ${TEST_HOSTNAME}`]) {
      t.ok(dns.queries.includes(q), `asked ${q}`);
    }

    const got = await req<Domain>('GET', `/domains/${d.id}`);
    t.same(got.body, v, 'the result is stored');

    const ev = (await events('domain.verified')).filter((e) => e.data.id === d.id);
    t.equal(ev.length, 1);
    t.match(ev[0]!.data, { id: d.id, name: 'verify-ok.example', status: 'verified' });
    t.equal(ev[0]!.created_at, at);

    // Verifying again keeps the original verified_at and moves last_checked_at.
    app.clock.advance(60_000);
    const again = await verify(d);
    t.equal(again.status, 'verified');
    t.equal(again.verified_at, at);
    t.equal(again.last_checked_at, app.clock.now().toISOString());
  });

  t.test('verify: DKIM published with folded whitespace, split over TXT strings, SPF by include', async (t) => {
    const d = await create('verify-folded.example');
    const value = recordOf(d, 'DKIM').value;
    const p = value.slice(value.indexOf('p=') + 2);
    const folded = `v=DKIM1;  k=rsa;\tp=${p.match(/.{1,60}/g)!.join(' ')}`;
    publish(d, { dkim: [folded], spf: ['v=spf1 include:_spf.verify-folded.example -all'] });
    dns.set('TXT', '_spf.verify-folded.example', [`v=spf1 ip4:127.0.0.1 -all`]);
    dns.queries.length = 0;
    const v = await verify(d);
    t.equal(v.status, 'verified', JSON.stringify(v.dns_records));
    t.equal(recordOf(v, 'DKIM').status, 'verified');
    t.equal(recordOf(v, 'SPF').status, 'verified', 'SPF is evaluated, following include:');
    t.ok(dns.queries.includes('TXT _spf.verify-folded.example'), 'the include was looked up');
  });

  t.test('SRV records for mail clients (RFC 6186): listed apart, checked, never blocking verification', async (t) => {
    const d = await create('verify-srv.example');
    t.notOk(d.dns_records.some((r) => r.record === 'SRV'), 'not in dns_records');
    const srv = d.mail_client_records;
    const cfg = app.appliance.ctx.config;
    t.same(
      srv.map(({ name, value, priority, type, required }) => ({ name, value, priority, type, required })),
      [
        { name: '_imaps._tcp.verify-srv.example', value: `1 ${cfg.imapsPort} ${TEST_HOSTNAME}`, priority: 0, type: 'SRV', required: false },
        { name: '_submission._tcp.verify-srv.example', value: `1 ${cfg.submissionPort} ${TEST_HOSTNAME}`, priority: 0, type: 'SRV', required: false },
        { name: '_pop3s._tcp.verify-srv.example', value: `1 ${cfg.pop3sPort} ${TEST_HOSTNAME}`, priority: 0, type: 'SRV', required: false },
        { name: '_submissions._tcp.verify-srv.example', value: `1 ${cfg.submissionsPort} ${TEST_HOSTNAME}`, priority: 0, type: 'SRV', required: false },
      ],
    );
    // Everything but the SRV records published: verified all the same, the SRV records failed with a reason.
    publish(d);
    for (const r of srv) dns.remove(r.name);
    dns.set('SRV', '_pop3s._tcp.verify-srv.example', [{ priority: 0, weight: 1, port: 1995, target: 'elsewhere.example' }]);
    const v = await verify(d);
    t.equal(v.status, 'verified', JSON.stringify(v.dns_records));
    const after = v.mail_client_records;
    t.match(after[0], { status: 'failed', reason: /No SRV record found at _imaps\._tcp\.verify-srv\.example/ });
    t.match(after[2], { status: 'failed', reason: /does not point at mx\.appliance\.test port/ });
    t.ok(dns.queries.includes('SRV _submission._tcp.verify-srv.example'), 'looked up through the resolver');
    publish(d);
    const again = await verify(d);
    t.ok(again.mail_client_records.every((r) => r.status === 'verified' && !r.reason), 'published: verified');
  });

  t.test('verify: DKIM with another key → failed', async (t) => {
    const d = await create('verify-wrongkey.example');
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const otherKey = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    publish(d, { dkim: [`v=DKIM1; k=rsa; p=${otherKey}`] });
    const v = await verify(d);
    t.equal(v.status, 'failed');
    t.equal(v.verified_at, null);
    t.equal(recordOf(v, 'SPF').status, 'verified');
    t.equal(recordOf(v, 'DMARC').status, 'verified');
    t.equal(recordOf(v, 'MX').status, 'verified');
    const dkim = recordOf(v, 'DKIM');
    t.equal(dkim.status, 'failed');
    t.match(dkim.reason, /public key/);
    t.match(dkim.reason, dkim.name);

    const ev = (await events('domain.failed')).filter((e) => e.data.id === d.id);
    t.equal(ev.length, 1);
    t.match(ev[0]!.data, { id: d.id, name: 'verify-wrongkey.example', status: 'failed' });
    t.equal((await events('domain.verified')).filter((e) => e.data.id === d.id).length, 0);
  });

  t.test('verify: nothing published (NXDOMAIN) → failed, every record with a reason', async (t) => {
    const d = await create('verify-missing.example');
    dns.queries.length = 0;
    const v = await verify(d);
    t.equal(v.status, 'failed');
    t.equal(v.verified_at, null);
    t.equal(v.last_checked_at, app.clock.now().toISOString());
    for (const r of v.dns_records) {
      t.equal(r.status, 'failed', `${r.record} failed`);
      t.type(r.reason, 'string');
    }
    t.match(recordOf(v, 'SPF').reason, /No SPF record .*verify-missing\.example/);
    t.match(recordOf(v, 'DKIM').reason, /No DKIM record/);
    t.match(recordOf(v, 'DMARC').reason, /No DMARC record/);
    t.match(recordOf(v, 'MX').reason, /No MX record/);
    t.ok(dns.queries.includes('TXT verify-missing.example'));
    t.ok(dns.queries.includes('MX verify-missing.example'));
    t.same((await req<Domain>('GET', `/domains/${d.id}`)).body, v, 'stored');

    // Publishing then verifying again sees the new records (no stale negative answer).
    publish(d);
    const later = await verify(d);
    t.equal(later.status, 'verified', JSON.stringify(later.dns_records));
    t.ok(later.dns_records.every((r) => r.status === 'verified' && !r.reason), 'the old reasons are gone');
  });

  t.test('verify: SPF that does not authorise the box → failed', async (t) => {
    const d = await create('verify-spf.example');
    publish(d, { spf: ['v=spf1 ip4:192.0.2.1 -all'] });
    const v = await verify(d);
    t.equal(v.status, 'failed');
    const spf = recordOf(v, 'SPF');
    t.equal(spf.status, 'failed');
    t.match(spf.reason, /does not authorise mx\.appliance\.test/);
    t.match(spf.reason, /127\.0\.0\.1: fail/);
    t.equal(recordOf(v, 'DKIM').status, 'verified');

    // A soft fail or neutral does not authorise either.
    publish(d, { spf: ['v=spf1 ~all'] });
    t.match(recordOf(await verify(d), 'SPF'), { status: 'failed', reason: /softfail/ });

    // Two SPF records is a permanent error (RFC 7208 §4.5), even if one is right.
    publish(d, { spf: [SPF_VALUE, 'v=spf1 include:other.example ~all'] });
    const two = await verify(d);
    t.equal(two.status, 'failed');
    t.match(recordOf(two, 'SPF'), { status: 'failed', reason: /2 SPF records/ });

    // Authorising the box by address is as good as naming it.
    publish(d, { spf: ['v=spf1 ip4:127.0.0.0/8 -all'] });
    const byIp = await verify(d);
    t.equal(byIp.status, 'verified', JSON.stringify(byIp.dns_records));
  });

  t.test('verify: DMARC and MX missing but SPF and DKIM right → verified, DMARC/MX failed', async (t) => {
    const d = await create('verify-partial.example');
    publish(d, { dmarc: null, mx: false });
    const v = await verify(d);
    t.equal(v.status, 'verified');
    t.ok(v.verified_at);
    t.match(recordOf(v, 'SPF'), { status: 'verified', required: true });
    t.match(recordOf(v, 'DKIM'), { status: 'verified', required: true });
    t.match(recordOf(v, 'DMARC'), { status: 'failed', required: false, reason: /No DMARC record/ });
    t.match(recordOf(v, 'MX'), { status: 'failed', required: false, reason: /No MX record/ });

    // An MX pointing elsewhere is reported as such.
    dns.set('MX', d.name, [{ exchange: 'mx.elsewhere.example', priority: 10 }]);
    const again = await verify(d);
    t.equal(again.status, 'verified');
    t.match(recordOf(again, 'MX'), { status: 'failed', reason: /do not point at mx\.appliance\.test/ });
  });

  t.test('verify: SERVFAIL from the DNS server → failed with the DNS failure as reason, no 500', async (t) => {
    const d = await create('verify-servfail.example');
    publish(d);
    for (const r of [...d.dns_records, ...d.mail_client_records]) dns.fail(r.name);
    dns.queries.length = 0;
    const res = await req<Domain>('POST', `/domains/${d.id}/verify`);
    t.equal(res.status, 200);
    const v = res.body;
    t.equal(v.status, 'failed');
    for (const r of v.dns_records) {
      t.equal(r.status, 'failed', `${r.record} failed`);
      t.match(r.reason, /DNS (TXT|MX|SRV) look-up for \S+ failed \(ESERVFAIL\)/, `${r.record}: ${r.reason}`);
    }
    t.ok(dns.queries.includes('TXT verify-servfail.example'), 'the server was asked');
    t.equal((await events('domain.failed')).filter((e) => e.data.id === d.id).length, 1);

    // Once the server answers again, so does verification.
    publish(d);
    t.equal((await verify(d)).status, 'verified');
  });

  t.test('verify: a verified domain whose records disappear becomes failed on the next verify', async (t) => {
    const d = await create('verify-drift.example');
    publish(d);
    const ok = await verify(d);
    t.equal(ok.status, 'verified');
    t.ok(ok.verified_at);

    dns.remove(d.name);
    dns.remove(recordOf(d, 'DKIM').name);
    app.clock.advance(3_600_000);
    const v = await verify(d);
    t.equal(v.status, 'failed', JSON.stringify(v.dns_records));
    t.equal(v.verified_at, null);
    t.equal(v.last_checked_at, app.clock.now().toISOString());
    t.match(recordOf(v, 'SPF'), { status: 'failed', reason: /No SPF record/ });
    t.match(recordOf(v, 'DKIM'), { status: 'failed', reason: /No DKIM record/ });
    t.match(recordOf(v, 'DMARC'), { status: 'verified' });

    const failedEvents = (await events('domain.failed')).filter((e) => e.data.id === d.id);
    t.equal(failedEvents.length, 1);
    t.equal(failedEvents[0]!.created_at, v.last_checked_at);
    t.equal((await events('domain.verified')).filter((e) => e.data.id === d.id).length, 1, 'one verified event before');
    // Regression: the spec's domain.dns_drift (a verified domain's SPF record disappears) was never recorded.
    const drift = (await events('domain.dns_drift')).filter((e) => e.data.id === d.id);
    t.equal(drift.length, 1, 'domain.dns_drift: the SPF record disappeared');
    t.equal(drift[0]!.created_at, v.last_checked_at);
    t.same(drift[0]!.data.drift, [{ record: 'SPF', name: d.name, reason: 'No SPF record (v=spf1) found at verify-drift.example' }]);
  });

  t.test('domain.dns_drift: the MX of a domain that receives mail; not for an outage, nor an MX of a sending-only domain', async (t) => {
    const d = await create('verify-mxdrift.example');
    publish(d);
    t.equal((await verify(d)).status, 'verified');
    const drifts = async () => (await events('domain.dns_drift')).filter((e) => e.data.id === d.id);
    dns.set('MX', d.name, [{ exchange: 'mx.elsewhere.example', priority: 10 }]);
    t.equal((await verify(d)).status, 'verified', 'MX is recommended: the domain stays verified');
    t.equal((await drifts()).length, 0, 'inbound_mode none: the MX is not watched');
    publish(d);
    await verify(d);
    t.equal((await req('PATCH', `/domains/${d.id}`, { body: { inbound_mode: 'webhook' } })).status, 200);
    dns.fail(d.name);
    await verify(d);
    t.equal((await drifts()).length, 0, 'a DNS failure is not a drift');
    dns.set('MX', d.name, [{ exchange: 'mx.elsewhere.example', priority: 10 }]);
    dns.set('TXT', d.name, [SPF_VALUE]);
    const v = await verify(d);
    t.equal(v.status, 'verified');
    const got = await drifts();
    t.equal(got.length, 1);
    t.match(got[0]!.data.drift, [{ record: 'MX', name: d.name, reason: /do not point at/ }]);
  });

  t.test('verify: with an IPv6 address too, SPF must authorise every address the box sends from', async (t) => {
    dns.set('AAAA', TEST_HOSTNAME, ['2001:db8::25']);
    t.teardown(() => dns.remove(TEST_HOSTNAME, 'AAAA'));
    const d = await create('verify-dualstack.example');

    // The record asked for (a:<host>) covers both addresses.
    publish(d);
    dns.queries.length = 0;
    const ok = await verify(d);
    t.equal(recordOf(ok, 'SPF').status, 'verified', JSON.stringify(recordOf(ok, 'SPF')));
    t.ok(dns.queries.includes(`AAAA ${TEST_HOSTNAME}`), "the box's AAAA was looked up");

    // Authorising the IPv4 address only: mail the box sends over IPv6 fails SPF at the receiver, yet the
    // check passes as soon as any one address passes.
    publish(d, { spf: ['v=spf1 ip4:127.0.0.1 -all'] });
    const v4only = await verify(d);
    t.equal(recordOf(v4only, 'SPF').status, 'failed', 'every address of the box must pass');
    // Authorising the IPv6 address only is the mirror case.
    publish(d, { spf: ['v=spf1 ip6:2001:db8::25 -all'] });
    const v6only = await verify(d);
    t.equal(recordOf(v6only, 'SPF').status, 'failed', 'every address of the box must pass');
    // Authorising neither fails, naming both results.
    publish(d, { spf: ['v=spf1 -all'] });
    t.match(recordOf(await verify(d), 'SPF'), { status: 'failed', reason: /127\.0\.0\.1: fail, 2001:db8::25: fail/ });
  });

  t.test('verify: an IDN domain verifies under its punycode name', async (t) => {
    const d = await create('Überprüfung.example');
    t.equal(d.name, 'xn--berprfung-p9af.example');
    publish(d);
    dns.queries.length = 0;
    const v = await verify(d);
    t.equal(v.status, 'verified', JSON.stringify(v.dns_records));
    t.ok(dns.queries.includes('TXT xn--berprfung-p9af.example'));
  });

  // Checked by hand against BIND 9.18 (authoritative) behind Unbound 1.17 (recursive): the regressions below
  // replay on the dns2 server what those servers answered.

  t.test('zone_file_line: the records as a zone file takes them, the DKIM key split in strings of ≤ 255', async (t) => {
    const d = await create('zone-line.example');
    const dkim = recordOf(d, 'DKIM');
    t.ok(dkim.value.length > 255, 'a 2048-bit key does not fit one TXT string (BIND: "syntax error")');
    t.same(
      d.dns_records.filter((r) => r.record !== 'DKIM').map((r) => r.zone_file_line),
      [
        `zone-line.example. IN TXT "${SPF_VALUE}"`,
        `_dmarc.zone-line.example. IN TXT "v=DMARC1; p=none; rua=mailto:dmarc-reports@zone-line.example"`,
        `zone-line.example. IN MX 10 ${TEST_HOSTNAME}.`,
      ],
    );
    t.same(d.mail_client_records.map((r) => r.zone_file_line), d.mail_client_records.map((r) => `${r.name}. IN SRV 0 ${r.value}.`));
    const m = /^(\S+)\. IN TXT ((?:"[^"]*" ?)+)$/.exec(dkim.zone_file_line!);
    t.ok(m, dkim.zone_file_line!);
    t.equal(m![1], dkim.name);
    const strings = [...m![2]!.matchAll(/"([^"]*)"/g)].map((x) => x[1]!);
    t.ok(strings.length > 1 && strings.every((x) => x.length <= 255), `${strings.length} strings of at most 255 characters`);
    // Published as those strings (one record), it verifies: the strings are joined before the key is read.
    publish(d, { dkim: null });
    dns.set('TXT', dkim.name, [strings]);
    const v = await verify(d);
    t.equal(v.status, 'verified', JSON.stringify(v.dns_records));
    t.same((await req<Domain>('GET', `/domains/${d.id}`)).body.dns_records.map((r) => r.zone_file_line), d.dns_records.map((r) => r.zone_file_line));
  });

  // Regression: one SERVFAIL or timeout on a re-verify turned a verified domain into failed (verified_at
  // wiped, domain.failed, its mail refused as unverified) until someone verified again. Unbound answered
  // exactly that (ETIMEOUT, then SERVFAIL) while the customer's BIND was down.
  t.test('verify: a verified domain stays verified when the DNS does not answer (SERVFAIL, timeout)', async (t) => {
    const d = await create('verify-outage.example');
    publish(d);
    const ok = await verify(d);
    t.equal(ok.status, 'verified');
    const failedBefore = (await events('domain.failed')).filter((e) => e.data.id === d.id).length;

    for (const [how, code] of [['fail', 'ESERVFAIL'], ['drop', 'ETIMEOUT']] as const) {
      for (const r of d.dns_records) dns[how](r.name);
      app.clock.advance(60_000);
      const v = await verify(d);
      t.equal(v.status, 'verified', `${code}: still verified`);
      t.equal(v.verified_at, ok.verified_at, `${code}: verified_at kept`);
      t.equal(v.last_checked_at, app.clock.now().toISOString(), `${code}: checked now`);
      for (const r of v.dns_records.filter((x) => x.record !== 'SRV')) {
        t.equal(r.status, 'verified', `${code}: ${r.record} keeps its status`);
        t.match(r.reason, new RegExp(`^DNS (TXT|MX) look-up for ${r.name.replace(/\./g, '\\.')} failed \\(${code}\\); the last check's result is kept, try again later$`), `${code}: ${r.record} says why`);
      }
      t.equal((await events('domain.failed')).filter((e) => e.data.id === d.id).length, failedBefore, `${code}: no domain.failed`);
      const preview = await req<{ signed: boolean; warnings: string[] }>('POST', '/emails/preview', {
        body: { from: `hello@${d.name}`, to: 'someone@elsewhere.example', subject: 'Hi', text: 'Hello' },
      });
      t.equal(preview.body.signed, true, `${code}: its mail is still signed and sent`);
      publish(d);
    }

    // An answer that the record is gone still fails it, outage or not elsewhere.
    dns.fail(d.name);
    dns.remove(recordOf(d, 'DKIM').name);
    const gone = await verify(d);
    t.equal(gone.status, 'failed');
    t.match(recordOf(gone, 'DKIM'), { status: 'failed', reason: /No DKIM record/ });
    t.match(recordOf(gone, 'SPF'), { status: 'verified', reason: /ESERVFAIL.*kept/ });
    // A domain that is not verified needs real answers: an outage does not verify it.
    publish(d, { spf: null });
    dns.fail(d.name);
    const still = await verify(d);
    t.equal(still.status, 'failed', 'a failed domain is not verified by a kept result');
    publish(d);
    t.equal((await verify(d)).status, 'verified');
  });

  // Regression: mailauth skips an include: answered SERVFAIL (RFC 7208 §5.2: temperror), and a temperror
  // was reported as "does not authorise …; add a:…".
  t.test('verify: an SPF include the DNS does not answer is a DNS failure, not a verdict', async (t) => {
    const d = await create('verify-include.example');
    publish(d, { spf: [`v=spf1 include:_spf.provider.example a:${TEST_HOSTNAME} ~all`] });
    dns.fail('_spf.provider.example');
    const v = await verify(d);
    t.match(recordOf(v, 'SPF'), { status: 'failed', reason: /^DNS TXT look-up for _spf\.provider\.example failed \(ESERVFAIL\); try again later$/ });
    dns.set('TXT', '_spf.provider.example', ['v=spf1 ip4:192.0.2.0/24 -all']);
    t.equal(recordOf(await verify(d), 'SPF').status, 'verified');
  });

  // Regression: records entered in full at a DNS host that appends the zone, or without their trailing
  // dot in a zone file, land at <name>.<domain> (BIND served acme.test.acme.test); the reasons only said
  // "not found", and an MX target without its dot was only "does not point at".
  t.test('verify: records at the doubled name, an MX target without its dot: the reason says so', async (t) => {
    const d = await create('verify-doubled.example');
    const dkim = recordOf(d, 'DKIM');
    const twice = (name: string) => `${name}.${d.name}`;
    dns.set('TXT', twice(d.name), [SPF_VALUE]);
    dns.set('TXT', twice(dkim.name), [dkim.value]);
    dns.set('TXT', twice(`_dmarc.${d.name}`), [recordOf(d, 'DMARC').value]);
    dns.set('MX', d.name, [{ exchange: `${TEST_HOSTNAME}.${d.name}`, priority: 10 }]);
    const v = await verify(d);
    t.equal(v.status, 'failed');
    t.match(recordOf(v, 'SPF').reason, `one was found at verify-doubled.example.verify-doubled.example: your DNS host added verify-doubled.example to the name entered. Enter the name as @, or in full with a trailing dot (verify-doubled.example.)`);
    const selector = dkim.name.split('.')[0]!;
    t.match(recordOf(v, 'DKIM').reason, `Enter the name as ${selector}._domainkey, or in full with a trailing dot (${dkim.name}.)`);
    t.match(recordOf(v, 'DMARC').reason, 'Enter the name as _dmarc,');
    t.match(recordOf(v, 'MX').reason, `(found: 10 ${TEST_HOSTNAME}.verify-doubled.example): ${TEST_HOSTNAME}.verify-doubled.example is ${TEST_HOSTNAME} written without its trailing dot`);
    publish(d);
    t.equal((await verify(d)).status, 'verified');
  });

  t.test('verify: DKIM through a CNAME chain verifies; a CNAME to a name without it says where it points', async (t) => {
    const d = await create('verify-cname.example');
    const dkim = recordOf(d, 'DKIM');
    publish(d, { dkim: null });
    dns.set('CNAME', dkim.name, ['dkim.verify-cname.example']);
    dns.set('CNAME', 'dkim.verify-cname.example', ['key1.provider.example']);
    dns.set('TXT', 'key1.provider.example', [dkim.value]);
    const v = await verify(d);
    t.equal(recordOf(v, 'DKIM').status, 'verified', JSON.stringify(recordOf(v, 'DKIM')));
    dns.remove('key1.provider.example');
    t.match(recordOf(await verify(d), 'DKIM'), {
      status: 'failed',
      reason: `No DKIM record found at ${dkim.name}; ${dkim.name} is a CNAME to dkim.verify-cname.example, which has no such TXT record`,
    });
  });

  // Regression: a verifier reads one TXT record at a selector (mailauth the first; BIND served the stale
  // one first), but the check passed when any of them carried the key.
  t.test('verify: a stale key next to this one at the selector fails, naming the cause', async (t) => {
    const d = await create('verify-twokeys.example');
    const dkim = recordOf(d, 'DKIM');
    publish(d, { dkim: ['v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQDstale', dkim.value] });
    const v = await verify(d);
    t.equal(v.status, 'failed');
    t.match(recordOf(v, 'DKIM').reason, /^2 TXT records found at \S+, one with this domain's key: a verifier reads only one of them/);
  });

  // Regression: receivers only read an SPF record that begins exactly with v=spf1 (RFC 7208 §4.5).
  t.test('verify: SPF with a leading blank or pasted with its quotes fails, naming the cause', async (t) => {
    const d = await create('verify-spfblank.example');
    publish(d, { spf: [` ${SPF_VALUE}`] });
    t.match(recordOf(await verify(d), 'SPF'), { status: 'failed', reason: /starts with a blank/ });
    publish(d, { spf: [`"${SPF_VALUE}"`] });
    t.match(recordOf(await verify(d), 'SPF'), { status: 'failed', reason: /has quotation marks inside its value/ });
  });

  t.test('verify: many TXT records at the apex (an answer over 512 bytes, TCP) still find the SPF record', async (t) => {
    const d = await create('verify-bigtxt.example');
    publish(d, { spf: [...Array.from({ length: 40 }, (_, i) => `site-verification-${i}=abcdefghijklmnopqrstuvwxyz0123456789`), SPF_VALUE] });
    const v = await verify(d);
    t.equal(recordOf(v, 'SPF').status, 'verified', JSON.stringify(recordOf(v, 'SPF')));
  });

  t.test('verify: unknown id answers 404', async (t) => {
    const res = await req<ErrorBody>('POST', '/domains/00000000-0000-4000-8000-000000000000/verify');
    t.equal(res.status, 404);
    t.equal(res.body.code, 'not_found');
  });

  t.test('no API response ever carried private key material', async (t) => {
    t.ok(seen.length > 50, `${seen.length} responses checked`);
    for (const text of seen) t.notOk(/PRIVATE/.test(text), 'no PRIVATE in a response');
  });
});
