// Resend's official Node SDK (`resend`, a dev dependency) driven against the box with its base URL pointed
// at the appliance: the calls the README lists as working must work unchanged, and where the SDK's and the
// spec's shapes differ, this file shows what a caller gets (the README documents the same).
import t from 'tap';
import { Resend } from 'resend';
import { startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { publishRecords, type DomainView } from '../helpers/domains.js';

/** The box answers with the spec's shapes, which the SDK hands back as they came (typed as Resend's). */
const asBox = <T>(data: unknown): T => data as T;

interface BoxDomain extends DomainView {
  tls_mode: string;
  click_tracking: boolean;
}
interface BoxEmail {
  id: string;
  from: string;
  to: string[];
  subject: string;
  status: string;
  mode: string;
  scheduled_at: string | null;
  attachments: Array<{ filename: string; content_type: string; size: number }>;
}
interface BoxError {
  error: string;
  code: string;
}

t.test("Resend's Node SDK against the box", async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  const resend = new Resend(app.apiKey, { baseUrl: app.url });

  let domainId = '';
  t.test('domains.create, verify, get, list', async (t) => {
    const created = await resend.domains.create({ name: 'sdk.example', tls: 'enforced' });
    t.equal(created.error, null);
    const domain = asBox<BoxDomain>(created.data);
    t.match(domain, { name: 'sdk.example', status: 'pending', tls_mode: 'enforced' }, "the SDK's tls is the box's tls_mode");
    t.ok(domain.dns_records.some((r) => r.record === 'DKIM'), 'the records to publish are dns_records (Resend: records)');
    domainId = domain.id;

    publishRecords(dns, domain);
    const verified = await resend.domains.verify(domainId);
    t.equal(asBox<BoxDomain>(verified.data).status, 'verified');

    const got = await resend.domains.get(domainId);
    t.match(asBox<BoxDomain>(got.data), { id: domainId, name: 'sdk.example', status: 'verified' });

    const list = await resend.domains.list();
    t.equal(list.error, null);
    const { domains } = asBox<{ domains: BoxDomain[] }>(list.data);
    t.ok(domains.some((d) => d.id === domainId), 'the list is { domains } (Resend: { data })');

    const updated = await resend.domains.update({ id: domainId, clickTracking: true, tls: 'opportunistic' });
    t.same(updated.data, { success: true });
    t.match(asBox<BoxDomain>((await resend.domains.get(domainId)).data), { click_tracking: true, tls_mode: 'opportunistic' });

    const spare = await resend.domains.create({ name: 'spare.sdk.example' });
    const removed = await resend.domains.remove(asBox<BoxDomain>(spare.data).id);
    t.same(removed.data, { success: true });
    t.match(asBox<BoxError>((await resend.domains.get(asBox<BoxDomain>(spare.data).id)).error), { code: 'not_found' });

    const duplicate = await resend.domains.create({ name: 'sdk.example' });
    t.equal(duplicate.data, null);
    t.match(asBox<BoxError>(duplicate.error), { code: 'conflict' }, 'errors are the spec’s { error, code }');
  });

  t.test('apiKeys.create, list, remove', async (t) => {
    const created = await resend.apiKeys.create({ name: 'sdk ci', permission: 'sending_access' });
    t.equal(created.error, null);
    t.match(created.data?.token, /^sk_live_/);
    const keyId = created.data!.id;

    const list = await resend.apiKeys.list();
    const { keys } = asBox<{ keys: Array<{ id: string; name: string; permission: string }> }>(list.data);
    t.match(
      keys.find((k) => k.id === keyId),
      { name: 'sdk ci', permission: 'sending_access' },
      'the list is { keys } (Resend: { data })',
    );

    const withIt = new Resend(created.data!.token, { baseUrl: app.url });
    const sentBefore = await withIt.emails.send({ from: 'hello@sdk.example', to: 'bounced@dest.example', subject: 'x', text: 'x' });
    t.equal(sentBefore.error, null, 'the new key sends');

    const removed = await resend.apiKeys.remove(keyId);
    t.same(removed.data, { success: true });
    const after = await withIt.emails.get(sentBefore.data!.id);
    t.same(after.error, { error: 'Invalid API key', code: 'unauthorized' }, 'a removed key stops working at once');

    const noPermission = await resend.apiKeys.create({ name: 'no permission' });
    t.same(
      noPermission.error,
      { error: 'Request body is missing required fields: permission', code: 'invalid_request' },
      'permission is required by the spec (Resend defaults it to full_access)',
    );
  });

  t.test('emails.send, batch.send, get, update and cancel (test-mode key: nothing leaves the box)', async (t) => {
    const issued = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'sdk test', permission: 'full_access', mode: 'test' } });
    const test = new Resend(issued.body.token, { baseUrl: app.url });
    const base = { from: 'Acme <hello@sdk.example>', subject: 'Hello from the SDK', html: '<p>Hi <b>there</b></p>' };

    const sent = await test.emails.send({
      ...base,
      to: 'someone@dest.example',
      replyTo: 'support@sdk.example',
      attachments: [{ filename: 'notes.txt', content: Buffer.from('hello, attachment'), contentType: 'text/plain' }],
    });
    t.equal(sent.error, null);
    const id = sent.data!.id;
    t.match(id, /^em_/);

    const again = await test.emails.send({ ...base, to: 'someone@dest.example' }, { idempotencyKey: 'sdk-order-1' });
    const replay = await test.emails.send({ ...base, to: 'someone@dest.example' }, { idempotencyKey: 'sdk-order-1' });
    t.equal(replay.data?.id, again.data?.id, 'idempotencyKey is the Idempotency-Key header');

    const batch = await test.batch.send([
      { ...base, to: ['a@dest.example'] },
      { ...base, to: ['b@dest.example'], cc: ['c@dest.example'] },
    ]);
    t.equal(batch.error, null, 'the SDK posts a bare array; the box takes it');
    t.equal(batch.data?.data.length, 2);
    for (const item of batch.data?.data ?? []) t.match(item.id, /^em_/);

    const refused = await test.batch.send([{ ...base, from: 'x@nowhere.example', to: ['a@dest.example'] }]);
    t.same(
      asBox<{ data: unknown[] }>(refused.data).data[0],
      { error: "Domain 'nowhere.example' not found for this team", code: 'unprocessable_entity' },
      'an element the box refuses answers in its place (x-batch-validation is not read)',
    );

    await app.appliance.ctx.jobs.drain();
    const got = await test.emails.get(id);
    t.equal(got.error, null);
    t.match(asBox<BoxEmail>(got.data), { id, from: '"Acme" <hello@sdk.example>', to: ['someone@dest.example'], subject: base.subject, status: 'delivered', mode: 'test' });
    t.same(asBox<BoxEmail>(got.data).attachments, [{ filename: 'notes.txt', content_type: 'text/plain', size: 17 }], 'a Buffer attachment arrives as base64');

    const tagged = await test.emails.send({ ...base, to: 'x@dest.example', tags: [{ name: 'category', value: 'welcome' }] });
    t.same(tagged.error, { error: 'tags.0: must be a string', code: 'invalid_request' }, "the spec's tags are strings, Resend's { name, value } are refused");

    const later = new Date(app.clock.now().getTime() + 3_600_000).toISOString();
    const scheduled = await test.emails.send({ ...base, to: 'later@dest.example', scheduledAt: later });
    const scheduledId = scheduled.data!.id;
    t.equal(asBox<BoxEmail>((await test.emails.get(scheduledId)).data).scheduled_at, later);

    const evenLater = new Date(app.clock.now().getTime() + 7_200_000).toISOString();
    const moved = await test.emails.update({ id: scheduledId, scheduledAt: evenLater });
    t.same(moved.data, { success: true });
    t.equal(asBox<BoxEmail>((await test.emails.get(scheduledId)).data).scheduled_at, evenLater);

    const cancelled = await test.emails.cancel(scheduledId);
    t.same(cancelled.data, { success: true });
    t.equal(asBox<BoxEmail>((await test.emails.get(scheduledId)).data).status, 'cancelled');
    const twice = await test.emails.cancel(scheduledId);
    t.match(asBox<BoxError>(twice.error), { code: 'unprocessable_entity' }, 'a cancelled email cannot be cancelled again');

    const unverified = await test.emails.send({ ...base, from: 'hello@elsewhere.example', to: 'x@dest.example' });
    t.same(unverified.error, { error: "Domain 'elsewhere.example' not found for this team", code: 'unprocessable_entity' });
  });

  t.test('RESEND_BASE_URL points a client made without options at the box', async (t) => {
    const before = process.env.RESEND_BASE_URL;
    process.env.RESEND_BASE_URL = app.url;
    t.teardown(() => {
      if (before === undefined) delete process.env.RESEND_BASE_URL;
      else process.env.RESEND_BASE_URL = before;
    });
    const fromEnv = new Resend(app.apiKey);
    const got = await fromEnv.domains.get(domainId);
    t.equal(asBox<BoxDomain>(got.data).name, 'sdk.example');
  });
});
