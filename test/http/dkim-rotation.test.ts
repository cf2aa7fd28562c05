// DKIM key rotation over real HTTP, against a real DNS server on loopback: rotate → publish → activate →
// the retire job when the fake clock passes retire_after; abort; every 404, 409 and 422; key types (RSA, or
// Ed25519 with RSA beside it); the events and their data; the rate limits of the three paths.
import t from 'tap';
import { DAY, HOUR, MINUTE } from '../../src/core/clock.js';
import { createOtherTeam, startTestApp, type TestApp } from '../helpers/app.js';
import { startDns, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';

interface DkimMeta {
  selector: string;
  algorithm: 'rsa' | 'ed25519';
  state: 'active' | 'pending' | 'retiring' | 'retired';
  retire_after: string | null;
}
interface DnsRecord {
  record: string;
  type: string;
  name: string;
  value: string;
  required: boolean;
  status: string;
  reason?: string;
  zone_file_line: string;
  dkim?: DkimMeta;
}
interface Rotation {
  domain_id: string;
  name: string;
  state: 'pending' | 'activated' | 'completed';
  key_type: 'rsa' | 'ed25519';
  selectors: { new: string[]; old: string[] };
  records: DnsRecord[];
  records_to_remove?: DnsRecord[];
  started_at: string;
  activated_at: string | null;
  retire_after: string | null;
  completed_at?: string;
}
interface Domain {
  id: string;
  name: string;
  status: string;
  dkim_key_type: 'rsa' | 'ed25519';
  dkim_rotation: Omit<Rotation, 'domain_id' | 'name' | 'records'> | null;
  dns_records: DnsRecord[];
}
interface ErrorBody {
  error: string;
  code: string;
}
interface EventItem {
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

const dkimOf = (d: Domain) => d.dns_records.filter((r) => r.record === 'DKIM');
const bySelector = (d: Domain, selector: string) => dkimOf(d).find((r) => r.dkim?.selector === selector)!;

function helpers(app: TestApp, dns: TestDns) {
  let n = 0;
  return {
    name: (label: string) => `${label}-${++n}.example`,
    get: async (id: string) => (await app.request<Domain>('GET', `/domains/${id}`)).body,
    rotate: (id: string, body?: Record<string, unknown>, key?: string) =>
      app.request<Rotation & ErrorBody>('POST', `/domains/${id}/dkim/rotate`, { ...(body ? { body } : {}), ...(key ? { key } : {}) }),
    activate: (id: string, body?: Record<string, unknown>, key?: string) =>
      app.request<Rotation & ErrorBody>('POST', `/domains/${id}/dkim/rotate/activate`, { ...(body ? { body } : {}), ...(key ? { key } : {}) }),
    abort: (id: string, key?: string) => app.request<{ success: true } & ErrorBody>('DELETE', `/domains/${id}/dkim/rotate`, key ? { key } : {}),
    publish: (records: DnsRecord[]) => {
      for (const r of records) dns.set('TXT', r.name, [r.value]);
    },
    events: async (type: string) => (await app.request<{ data: EventItem[] }>('GET', `/events?type=${type}&per_page=100`)).body.data,
  };
}

t.test('DKIM rotation', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  const h = helpers(app, dns);

  t.test('rotate → publish → activate → retired by the job at retire_after', async (t) => {
    const domain = (await addVerifiedDomain(app, dns, h.name('cycle'))) as unknown as Domain;
    const [old] = dkimOf(domain);
    t.equal(domain.dkim_key_type, 'rsa', 'RSA unless asked');
    t.equal(domain.dkim_rotation, null);
    t.match(old!.dkim, { state: 'active', algorithm: 'rsa', retire_after: null });
    const started = app.clock.now().toISOString();

    // 1. rotate
    const rotated = await h.rotate(domain.id);
    t.equal(rotated.status, 201, rotated.text);
    const rotation = rotated.body;
    t.match(rotation, { domain_id: domain.id, name: domain.name, state: 'pending', key_type: 'rsa', started_at: started, activated_at: null, retire_after: null });
    t.same(rotation.selectors.old, [old!.dkim!.selector]);
    t.equal(rotation.selectors.new.length, 1);
    const [fresh] = rotation.records;
    t.not(fresh!.dkim!.selector, old!.dkim!.selector, 'a new selector');
    t.match(fresh, { record: 'DKIM', type: 'TXT', name: `${rotation.selectors.new[0]}._domainkey.${domain.name}`, value: /^v=DKIM1; k=rsa; p=MII/, required: false, status: 'pending' });
    t.match(fresh!.dkim, { state: 'pending', algorithm: 'rsa' });
    t.match(fresh!.zone_file_line, /^\S+\._domainkey\.\S+\. IN TXT "v=DKIM1; k=rsa; p=/);
    const [startedEvent] = await h.events('domain.dkim_rotation_started');
    t.same(startedEvent!.data, rotation, 'the event carries the rotation, the record to publish included');

    // The domain lists both selectors with their state; the pending one is not required to stay verified.
    let d = await h.get(domain.id);
    t.same(dkimOf(d).map((r) => [r.dkim!.selector, r.dkim!.state, r.required, r.status]), [
      [old!.dkim!.selector, 'active', true, 'verified'],
      [fresh!.dkim!.selector, 'pending', false, 'pending'],
    ]);
    t.match(d.dkim_rotation, { state: 'pending', key_type: 'rsa', selectors: rotation.selectors });
    const reverified = (await app.request<Domain>('POST', `/domains/${domain.id}/verify`)).body;
    t.equal(reverified.status, 'verified', 'a verify before the new record is published leaves the domain verified');
    t.match(bySelector(reverified, fresh!.dkim!.selector), { status: 'failed', reason: /No DKIM record found/ });

    // A second rotation waits for this one.
    const again = await h.rotate(domain.id);
    t.equal(again.status, 409);
    t.match(again.body, { code: 'conflict', error: new RegExp(`already pending \\(selector ${fresh!.dkim!.selector}\\)`) });

    // 2. activate: not before the record is there, and says what it found.
    let refused = await h.activate(domain.id);
    t.equal(refused.status, 422);
    t.match(refused.body, { code: 'unprocessable_entity', error: new RegExp(`not published as expected.*No DKIM record found at ${fresh!.name.replace(/\./g, '\\.')}`) });
    dns.set('TXT', fresh!.name, [old!.value]); // the old key pasted under the new name
    refused = await h.activate(domain.id);
    t.equal(refused.status, 422);
    t.match(refused.body.error, /does not carry this domain's public key \(found: "v=DKIM1; k=rsa; p=MIIB/);
    for (const bad of [0, 91, 2.5, '7']) {
      const res = await h.activate(domain.id, { retire_after_days: bad });
      t.equal(res.status, 400, `retire_after_days ${JSON.stringify(bad)}`);
      t.match(res.body.error, /retire_after_days.*must be an integer between 1 and 90/);
    }
    h.publish([fresh!]);
    app.clock.advance(MINUTE);
    const activatedAt = app.clock.now();
    const activated = await h.activate(domain.id, { retire_after_days: 2 });
    t.equal(activated.status, 200, activated.text);
    const retireAfter = new Date(activatedAt.getTime() + 2 * DAY).toISOString();
    t.match(activated.body, { state: 'activated', activated_at: activatedAt.toISOString(), retire_after: retireAfter, selectors: rotation.selectors });
    t.match(activated.body.records[0], { dkim: { state: 'active' }, required: true, status: 'verified' });
    const [activatedEvent] = await h.events('domain.dkim_rotation_activated');
    t.same(activatedEvent!.data, activated.body);
    d = await h.get(domain.id);
    t.same(dkimOf(d).map((r) => [r.dkim!.selector, r.dkim!.state, r.dkim!.retire_after, r.required]), [
      [old!.dkim!.selector, 'retiring', retireAfter, false],
      [fresh!.dkim!.selector, 'active', null, true],
    ]);
    t.match(d.dkim_rotation, { state: 'activated', retire_after: retireAfter });

    // Once activated: no second activation, no abort, no new rotation until it completes — each says when.
    for (const res of [await h.activate(domain.id), await h.abort(domain.id), await h.rotate(domain.id)]) {
      t.equal(res.status, 409);
      t.match(res.body.error, new RegExp(`rotation of '${domain.name}' is active.*old selector ${old!.dkim!.selector} will be retired at ${retireAfter}`));
    }

    // 3. the retire job, on the queue, at retire_after.
    app.clock.advance(2 * DAY - 1);
    await app.appliance.ctx.jobs.drain();
    t.equal(bySelector(await h.get(domain.id), old!.dkim!.selector).dkim!.state, 'retiring', 'not a millisecond early');
    app.clock.advance(1);
    await app.appliance.ctx.jobs.drain();
    d = await h.get(domain.id);
    t.equal(d.dkim_rotation, null, 'completed');
    const gone = bySelector(d, old!.dkim!.selector);
    t.match(gone, { required: false, status: 'pending', dkim: { state: 'retired' }, reason: new RegExp(`^Remove this record: its key was retired at ${retireAfter}`) });
    const [completed] = await h.events('domain.dkim_rotation_completed');
    t.match(completed!.data, {
      domain_id: domain.id,
      name: domain.name,
      state: 'completed',
      key_type: 'rsa',
      selectors: { new: rotation.selectors.new, old: rotation.selectors.old },
      started_at: started,
      activated_at: activatedAt.toISOString(),
      retire_after: retireAfter,
      completed_at: retireAfter,
    });
    t.same((completed!.data.records_to_remove as DnsRecord[]).map((r) => [r.name, r.value]), [[old!.name, old!.value]], 'the old record, to remove');
    const sealed = await app.appliance.ctx.db('dkim_keys').where({ domain_id: domain.id }).orderBy('created_at').select('selector', 'state', 'private_key_sealed');
    // Both keys may carry the same created_at (the fake clock): compare them in the order of their states.
    const keys = sealed.map((k: { state: string; private_key_sealed: string }) => [k.state, k.private_key_sealed === ''] as const).sort((a, b) => a[0].localeCompare(b[0]));
    t.same(keys, [['active', false], ['retired', true]], 'the old private key is deleted');

    // The retired record is listed until a verify finds it gone.
    await app.request('POST', `/domains/${domain.id}/verify`);
    t.ok(bySelector(await h.get(domain.id), old!.dkim!.selector), 'still published: still listed');
    dns.remove(old!.name, 'TXT');
    const after = (await app.request<Domain>('POST', `/domains/${domain.id}/verify`)).body;
    t.equal(after.status, 'verified');
    t.same(dkimOf(after).map((r) => r.dkim!.selector), [fresh!.dkim!.selector], 'removed from the DNS: no longer listed');

    // A next rotation may start now.
    t.equal((await h.rotate(domain.id)).status, 201);
    t.equal((await h.abort(domain.id)).status, 200);
  });

  t.test('retire_after_days defaults to 7', async (t) => {
    const domain = (await addVerifiedDomain(app, dns, h.name('default'))) as unknown as Domain;
    const rotation = (await h.rotate(domain.id)).body;
    h.publish(rotation.records);
    const activated = await h.activate(domain.id);
    t.equal(activated.status, 200, activated.text);
    t.equal(activated.body.retire_after, new Date(app.clock.now().getTime() + 7 * DAY).toISOString());
  });

  t.test('abort: the pending keys go; nothing to abort answers 409', async (t) => {
    const domain = (await addVerifiedDomain(app, dns, h.name('abort'))) as unknown as Domain;
    t.match((await h.abort(domain.id)).body, { code: 'conflict', error: `No DKIM rotation of '${domain.name}' to abort` });
    t.match((await h.activate(domain.id)).body, { code: 'conflict', error: /No DKIM rotation of .* to activate: start one with POST/ });
    const rotation = (await h.rotate(domain.id)).body;
    const res = await h.abort(domain.id);
    t.same([res.status, res.body], [200, { success: true }]);
    const d = await h.get(domain.id);
    t.same(dkimOf(d).map((r) => r.dkim!.state), ['active'], 'only the signing key is left');
    t.equal(d.dkim_rotation, null);
    const updated = (await h.events('domain.updated')).find((e) => e.data.id === domain.id)!;
    t.match(updated.data.changes, { dkim_rotation: 'aborted', selectors: rotation.selectors.new, records_to_remove: [{ name: rotation.records[0]!.name }] });
    t.equal((await h.abort(domain.id)).status, 409);
    t.equal((await h.rotate(domain.id)).status, 201, 'a new rotation may start');
  });

  t.test('404 for an unknown domain and for another team’s; 403 for a sending_access key', async (t) => {
    const domain = (await addVerifiedDomain(app, dns, h.name('tenant'))) as unknown as Domain;
    const other = await createOtherTeam(app);
    for (const [label, id, key] of [['unknown', 'dom_nope', undefined], ["another team's", domain.id, other.apiKey]] as const) {
      for (const res of [await h.rotate(id, undefined, key), await h.activate(id, undefined, key), await h.abort(id, key)]) {
        t.same([res.status, res.body], [404, { error: 'Domain not found', code: 'not_found' }], label);
      }
    }
    t.equal((await h.get(domain.id)).dkim_rotation, null, 'the other team changed nothing');
    const made = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'sender', permission: 'sending_access' } });
    for (const res of [await h.rotate(domain.id, undefined, made.body.token), await h.activate(domain.id, undefined, made.body.token), await h.abort(domain.id, made.body.token)]) {
      t.equal(res.status, 403);
    }
  });

  t.test('key types: ed25519 on create (with RSA beside it), and a rotation that changes the type', async (t) => {
    const bad = await app.request<ErrorBody>('POST', '/domains', { body: { name: h.name('bad-type'), dkim_key_type: 'dsa' } });
    t.same([bad.status, bad.body], [400, { error: 'dkim_key_type: must be one of rsa, ed25519', code: 'invalid_request' }]);

    const created = await app.request<Domain>('POST', '/domains', { body: { name: h.name('ed'), dkim_key_type: 'ed25519' } });
    t.equal(created.status, 201);
    t.equal(created.body.dkim_key_type, 'ed25519');
    const [ed, rsa] = dkimOf(created.body);
    t.match(ed, { required: true, value: /^v=DKIM1; k=ed25519; p=[A-Za-z0-9+/]{43}=$/, dkim: { algorithm: 'ed25519', state: 'active', selector: /^e\d{8}[a-z0-9]{4}$/ } });
    t.equal(Buffer.from(ed!.value.split('p=')[1]!, 'base64').length, 32, 'p= is the raw 32-byte key (RFC 8463 §4)');
    t.match(rsa, { required: true, value: /^v=DKIM1; k=rsa; p=MII/, dkim: { algorithm: 'rsa', state: 'active', selector: `s${ed!.dkim!.selector.slice(1)}` } });

    // An RSA domain rotates to Ed25519: both new records must be published before the activation.
    const domain = (await addVerifiedDomain(app, dns, h.name('to-ed'))) as unknown as Domain;
    const rotation = (await h.rotate(domain.id, { dkim_key_type: 'ed25519' })).body;
    t.match(rotation, { key_type: 'ed25519', state: 'pending' });
    t.same(rotation.records.map((r) => r.dkim!.algorithm), ['ed25519', 'rsa']);
    h.publish([rotation.records[1]!]);
    const refused = await h.activate(domain.id);
    t.equal(refused.status, 422);
    t.match(refused.body.error, new RegExp(`^The new DKIM records are not published as expected, so signing was not switched: No DKIM record found at ${rotation.records[0]!.name.replace(/\./g, '\\.')}$`));
    h.publish(rotation.records);
    t.equal((await h.activate(domain.id)).status, 200);
    const d = await h.get(domain.id);
    t.equal(d.dkim_key_type, 'ed25519');
    t.same(dkimOf(d).map((r) => [r.dkim!.algorithm, r.dkim!.state]), [['rsa', 'retiring'], ['ed25519', 'active'], ['rsa', 'active']]);
    // Rotating without a type keeps the domain's.
    app.clock.advance(8 * DAY);
    await app.appliance.ctx.jobs.drain();
    t.equal((await h.rotate(domain.id)).body.key_type, 'ed25519');
    t.equal((await h.rotate(domain.id)).status, 409);
    t.equal((await h.abort(domain.id)).status, 200);
    t.equal((await h.rotate(domain.id, { dkim_key_type: 'rsa' })).body.key_type, 'rsa', 'and back to RSA');
  });

  t.test('a look-up the DNS does not answer is a 503, and changes nothing', async (t) => {
    const domain = (await addVerifiedDomain(app, dns, h.name('servfail'))) as unknown as Domain;
    const rotation = (await h.rotate(domain.id)).body;
    dns.fail(rotation.records[0]!.name);
    const res = await h.activate(domain.id);
    t.equal(res.status, 503);
    t.match(res.body, { code: 'service_unavailable', error: /could not be looked up .*ESERVFAIL.*nothing was changed, try again later/ });
    t.equal((await h.get(domain.id)).dkim_rotation?.state, 'pending');
  });
});

t.test('rate limits of the three paths (spec: Limits)', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], rateLimits: true } });
  const h = helpers(app, dns);
  const domain = (await addVerifiedDomain(app, dns, 'limits.example')) as unknown as Domain;
  const cases = [
    { label: 'POST rotate', call: () => h.rotate(domain.id), limit: 5, window: HOUR },
    { label: 'POST rotate/activate', call: () => h.activate(domain.id), limit: 20, window: 15 * MINUTE },
    { label: 'DELETE rotate', call: () => h.abort(domain.id), limit: 10, window: HOUR },
  ];
  for (const c of cases) {
    const statuses: number[] = [];
    for (let i = 0; i < c.limit; i++) {
      const res = await c.call();
      statuses.push(res.status);
      t.equal(res.headers.get('x-ratelimit-limit'), String(c.limit), `${c.label}: its figure`);
    }
    t.notOk(statuses.includes(429), `${c.label}: ${c.limit} requests pass`);
    const over = await c.call();
    t.same([over.status, over.body], [429, { error: 'Rate limit exceeded. Please try again later.', code: 'rate_limit_exceeded' }], `${c.label}: the next is refused`);
    t.equal(over.headers.get('retry-after'), String(c.window / 1000));
    app.clock.advance(c.window);
    t.not((await c.call()).status, 429, `${c.label}: a new window after ${c.window / MINUTE} minutes`);
  }
});
