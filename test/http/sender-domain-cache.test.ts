// The send path remembers verified sender domains for a few seconds (services/sending/sender-domains.ts): every
// change to a domain made through the API — a failed re-verification, a deletion, a new domain of that
// name — is seen by the very next send.
import t from 'tap';
import { startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';

t.test('sender domain changes reach the send path at once', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  const domain = await addVerifiedDomain(app, dns, 'cached.example');
  const send = () => app.request<{ id?: string; error?: string; code?: string }>('POST', '/emails', { body: { from: 'hello@cached.example', to: ['a@dest.example'], subject: 'Hi', text: 'Hello' } });

  // Twice: the second is answered from the remembered domain.
  t.equal((await send()).status, 202);
  t.equal((await send()).status, 202);

  // Re-verification fails (the DKIM record is gone): the domain is no longer verified, and sends say so.
  const dkim = domain.dns_records.find((r) => r.name.includes('._domainkey.'))!;
  dns.remove(dkim.name);
  const failed = await app.request<{ status: string }>('POST', `/domains/${domain.id}/verify`);
  t.equal(failed.body.status, 'failed');
  const refused = await send();
  t.equal(refused.status, 422);
  t.equal(refused.body.error, "Domain 'cached.example' is not verified");

  // Verified again, then deleted: the next send no longer finds it.
  dns.set('TXT', dkim.name, [dkim.value]);
  t.equal((await app.request<{ status: string }>('POST', `/domains/${domain.id}/verify`)).body.status, 'verified');
  t.equal((await send()).status, 202);
  t.equal((await app.request('DELETE', `/domains/${domain.id}`)).status, 200);
  const gone = await send();
  t.equal(gone.status, 422);
  t.equal(gone.body.error, "Domain 'cached.example' not found for this team");

  // Created and verified anew (a new id): sends use the new domain.
  const again = await addVerifiedDomain(app, dns, 'cached.example');
  const sent = await send();
  t.equal(sent.status, 202);
  const row = await app.appliance.ctx.db('emails').where({ public_id: sent.body.id }).first('domain_id');
  t.equal(row.domain_id, again.id, 'the email belongs to the new domain');
});
