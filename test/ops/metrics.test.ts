// GET /metrics (issue 37 §2): off without MAIL_METRICS_TOKEN, the token required with it, and the exposition
// parsed by an independent Prometheus text parser after real traffic: an API send delivered to a remote MX, one
// bounced, mail in through the MX, an IMAP session open, a webhook delivered, DNS look-ups counted.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import t from 'tap';
import parse from 'parse-prometheus-text-format';
import { startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

const TOKEN = 'metrics-token-0123456789';

function value(families: ReturnType<typeof parse>, name: string, labels: Record<string, string> = {}): number | undefined {
  const f = families.find((x) => x.name === name);
  const m = f?.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
  if (!m) return undefined;
  return Number(m.value ?? m.count);
}

t.test('off without a token', async (t) => {
  const app = await startTestApp(t);
  const r = await app.request('GET', '/metrics', { key: null });
  t.equal(r.status, 404);
  t.match(r.body, { code: 'not_found' });
});

t.test('scraped and parsed', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink();
  t.teardown(() => sink.close());
  const hooks = await startWebhookReceiver();
  t.teardown(() => hooks.close());
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  sink.recipients.set('nobody@dest.example', { code: 550, text: '5.1.1 No such user' });
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port, localDomains: ['acme.example'], metricsToken: TOKEN } });

  t.equal((await app.request('GET', '/metrics', { key: null })).status, 401, 'no token');
  t.equal((await app.request('GET', '/metrics')).status, 401, 'an API key is not the token');
  t.equal((await app.request('GET', '/metrics', { key: 'metrics-token-wrong-000000' })).status, 401, 'a wrong token');

  await app.request('POST', '/webhooks', { body: { url: hooks.url, events: ['email.delivered'] } });
  await app.request('POST', '/mailboxes', { body: { address: 'alice@acme.example', password: 'correct horse battery' } });
  for (const to of ['someone@dest.example', 'nobody@dest.example']) {
    const r = await app.request('POST', '/emails', { body: { from: 'me@acme.example', to: [to], subject: 'hi', text: 'hello' } });
    t.ok(r.status === 200 || r.status === 202, r.text);
  }
  await app.appliance.ctx.jobs.drain();
  await app.appliance.ctx.jobs.drain();
  // A DNS check in the main thread (the MTA's own look-ups run in the render threads: not counted here).
  const domains = await app.request<{ domains: Array<{ id: string }> }>('POST', '/domains', { body: { name: 'other.example' } });
  t.equal(domains.status, 201);
  await app.request('POST', `/domains/${(domains.body as unknown as { id: string }).id}/verify`);
  // An IMAP session held open while scraping.
  const imap = net.connect({ host: '127.0.0.1', port: app.appliance.ports.imap.port });
  t.teardown(() => imap.destroy());
  await new Promise((resolve) => imap.once('data', resolve));

  const res = await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const families = parse(text);
  const names = new Set(families.map((f) => f.name));
  for (const name of [
    'mail_emails_accepted_total',
    'mail_recipient_outcomes_total',
    'mail_delivery_latency_seconds',
    'mail_queue_jobs',
    'mail_queue_due_jobs',
    'mail_queue_oldest_due_age_seconds',
    'mail_sessions',
    'mail_sessions_opened_total',
    'mail_smtp_messages_received_total',
    'mail_webhook_attempts_total',
    'mail_dns_lookups_total',
    'mail_dns_lookup_failures_total',
    'mail_nodejs_eventloop_lag_seconds',
    'mail_process_resident_memory_bytes',
    'mail_db_write_transaction_seconds',
    'mail_db_write_lock_wait_seconds',
    'mail_db_write_transaction_rollbacks_total',
    'mail_backup_last_success_timestamp_seconds',
    'mail_backup_last_failure_timestamp_seconds',
    'mail_backups_total',
  ]) t.ok(names.has(name), `${name} exposed`);
  for (const f of families) {
    if (f.type === 'COUNTER') t.match(f.name, /_total$/, `${f.name}: a counter ends in _total`);
    for (const m of f.metrics) for (const v of Object.values(m.labels ?? {})) t.notMatch(v, /@|^em_/, `${f.name}: no address or id as a label`);
  }
  t.equal(value(families, 'mail_emails_accepted_total', { source: 'api' }), 2);
  t.equal(value(families, 'mail_recipient_outcomes_total', { outcome: 'delivered', reason: 'none' }), 1);
  t.equal(value(families, 'mail_recipient_outcomes_total', { outcome: 'bounced' }), 1);
  t.equal(value(families, 'mail_delivery_latency_seconds'), 1, 'one first hand-over observed');
  t.ok((value(families, 'mail_dns_lookups_total', { type: 'TXT' }) ?? 0) >= 2, 'TXT look-ups counted');
  t.equal(value(families, 'mail_sessions', { listener: 'imap' }), 1, 'the open IMAP session');
  t.ok((value(families, 'mail_webhook_attempts_total', { result: 'success' }) ?? 0) >= 1, 'webhook delivered');
  t.equal(value(families, 'mail_queue_jobs', { state: 'dead' }), 0);
  // Every write transaction timed where it begins: the sends, mailbox and webhook above each took some.
  const held = families.find((f) => f.name === 'mail_db_write_transaction_seconds')!;
  const commits = held.metrics[0] as { count: string; sum: string; buckets: Record<string, string> } | undefined;
  t.ok(Number(commits?.count) >= 5, `write transactions counted (${commits?.count})`);
  t.ok(Number(commits?.sum) > 0 && Number(commits?.sum) < Number(commits?.count) * 5, 'their time held is plausible');
  t.equal(Number(commits?.buckets['+Inf']), Number(commits?.count), 'the +Inf bucket holds them all');
  const waits = families.find((f) => f.name === 'mail_db_write_lock_wait_seconds')!.metrics[0] as { count: string } | undefined;
  t.equal(Number(waits?.count), Number(commits?.count), 'each transaction\'s wait for the writer observed');
  t.equal(value(families, 'mail_backup_last_success_timestamp_seconds'), 0, 'no scheduled backup yet');
  // docs/grafana-dashboard.json names only metrics the box exposes.
  const dashboard = readFileSync(new URL('../../docs/grafana-dashboard.json', import.meta.url), 'utf8');
  const used = new Set([...dashboard.matchAll(/\bmail_[a-z0-9_]+/g)].map((m) => m[0].replace(/_bucket$/, '')));
  for (const name of used) t.ok(names.has(name), `dashboard metric ${name} exposed`);
});
