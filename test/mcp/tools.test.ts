// The MCP endpoint through the SDK's own client over real HTTP: every tool against the real appliance (a
// loopback DNS server, a sink for the remote MX, the box's own MX for inbound mail), scope refusals, errors as
// tool errors with the API's message and code, and tenant isolation.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { MINUTE } from '../../src/core/clock.js';
import { AppError } from '../../src/core/errors.js';
import { errorBody } from '../../src/mcp/server.js';
import { createOtherTeam, startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain, publishRecords, type DomainView } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';
import { addInboundDomain, smtpSend } from '../inbound/support.js';
import { connectMcp } from './support.js';

interface Listed<T> {
  data: T[];
  meta: { total: number };
}

t.test('the MCP endpoint', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: true });
  t.teardown(() => sink.close());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port } });
  const drain = () => app.appliance.ctx.jobs.drain();
  await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);

  const mcp = await connectMcp(t, app);

  t.test('initialize names the server; tools are listed with a JSON schema and a description', async (t) => {
    t.equal(mcp.client.getServerVersion()?.name, 'mailbox-appliance');
    t.match(mcp.client.getInstructions(), /send_email/);
    const { tools } = await mcp.client.listTools();
    const names = tools.map((tool) => tool.name);
    for (const name of [
      'send_email', 'send_batch', 'list_emails', 'get_email', 'cancel_email', 'reschedule_email',
      'list_domains', 'get_domain', 'get_domain_dns_records', 'create_domain', 'verify_domain',
      'list_inbound', 'get_inbound', 'reply_to_inbound', 'list_webhooks', 'list_webhook_deliveries', 'get_usage',
      'list_contacts', 'get_contact', 'create_contact', 'update_contact', 'list_segments', 'get_segment', 'list_topics', 'get_topic',
      'list_templates', 'get_template', 'render_template',
      'list_broadcasts', 'get_broadcast', 'create_broadcast', 'send_broadcast', 'broadcast_performance',
    ]) t.ok(names.includes(name), name);
    t.equal(new Set(names).size, names.length, 'names are unique');
    for (const tool of tools) {
      t.equal(tool.inputSchema.type, 'object', `${tool.name}: an object schema`);
      t.ok((tool.description ?? '').length > 60, `${tool.name}: a description an agent can act on`);
      t.match(tool.description, /Needs mcp:(read|send|admin)/, `${tool.name}: names its scope`);
    }
    const send = tools.find((tool) => tool.name === 'send_email')!;
    t.same((send.inputSchema.required ?? []).slice().sort(), ['from', 'to'], 'send_email requires from and to');
    t.equal(send.annotations?.readOnlyHint, false);
    t.equal(tools.find((tool) => tool.name === 'list_emails')!.annotations?.readOnlyHint, true);
  });

  let sentId = '';
  t.test('send_email sends through the send path to the remote MX; get_email shows the outcome and the timeline', async (t) => {
    const res = await mcp.call<{ id: string }>('send_email', {
      from: 'Acme <hello@acme.example>',
      to: ['alice@dest.example'],
      subject: 'Sent by an agent',
      text: 'Hello from MCP.',
      tags: ['mcp'],
    });
    t.equal(res.isError, false, JSON.stringify(res.json));
    t.match(res.json.id, /^em_/);
    t.same(res.structured, res.json, 'the same object as structured content');
    sentId = res.json.id;
    await drain();
    const tx = sink.accepted.find((m) => m.to.includes('alice@dest.example'));
    t.ok(tx, 'the sink received it');
    const parsed = await simpleParser(tx!.raw);
    t.equal(parsed.subject, 'Sent by an agent');
    t.match(parsed.text, /Hello from MCP\./);

    const got = await mcp.call<{ id: string; status: string; events: Array<{ type: string }> }>('get_email', { id: sentId });
    t.equal(got.isError, false);
    t.equal(got.json.id, sentId);
    t.equal(got.json.status, 'delivered');
    t.same(got.json.events.map((e) => e.type), ['queued', 'sending', 'sent', 'delivered']);

    const listed = await mcp.call<Listed<{ publicId: string; status: string }>>('list_emails', { status: 'delivered', per_page: 10 });
    t.ok(listed.json.data.some((e) => e.publicId === sentId));
    t.ok(listed.json.data.every((e) => e.status === 'delivered'));
  });

  t.test('send_batch answers each element: an id, or its own error', async (t) => {
    const res = await mcp.call<{ data: Array<{ id?: string; error?: string; code?: string }> }>('send_batch', {
      emails: [
        { from: 'hello@acme.example', to: ['bob@dest.example'], subject: 'One', text: 'one' },
        { from: 'hello@nowhere.example', to: ['bob@dest.example'], subject: 'Two', text: 'two' },
      ],
    });
    t.equal(res.isError, false);
    t.match(res.json.data[0]!.id, /^em_/);
    t.same(res.json.data[1], { error: "Domain 'nowhere.example' not found for this team", code: 'unprocessable_entity' });
  });

  t.test('reschedule_email and cancel_email act on a scheduled email', async (t) => {
    const at = new Date(app.clock.now().getTime() + 60 * MINUTE).toISOString();
    const sent = await mcp.call<{ id: string }>('send_email', { from: 'hello@acme.example', to: ['later@dest.example'], subject: 'Later', text: 'later', scheduled_at: at });
    const id = sent.json.id;
    const later = new Date(app.clock.now().getTime() + 120 * MINUTE).toISOString();
    const moved = await mcp.call('reschedule_email', { id, scheduled_at: later });
    t.same(moved.json, { success: true });
    t.equal((await mcp.call<{ scheduled_at: string }>('get_email', { id })).json.scheduled_at, later);
    const cancelled = await mcp.call('cancel_email', { id });
    t.same(cancelled.json, { success: true });
    t.equal((await mcp.call<{ status: string }>('get_email', { id })).json.status, 'cancelled');
    const again = await mcp.call('cancel_email', { id });
    t.equal(again.isError, true, 'a cancelled email cannot be cancelled again');
    t.match(again.json, { code: String });
  });

  let newDomain: DomainView;
  t.test('domains: create, the records to publish, verify; the DNS setup as a resource', async (t) => {
    const created = await mcp.call<DomainView>('create_domain', { name: 'News.Example' });
    t.equal(created.isError, false, JSON.stringify(created.json));
    newDomain = created.json;
    t.equal(newDomain.name, 'news.example');
    t.equal(newDomain.status, 'pending');

    const records = await mcp.call<{ domain: string; records: Array<{ type: string; name: string; value: string; zone_file_line: string; status: string }> }>('get_domain_dns_records', { id: newDomain.id });
    t.equal(records.json.domain, 'news.example');
    t.ok(records.json.records.some((r) => r.type === 'TXT' && r.name.includes('_domainkey') && r.value.startsWith('v=DKIM1')), 'the DKIM record to publish');
    t.ok(records.json.records.every((r) => r.zone_file_line.includes(r.type)), 'each as a zone-file line');

    const listed = await mcp.call<{ domains: Array<{ name: string }> }>('list_domains');
    t.same(listed.json.domains.map((d) => d.name).sort(), ['acme.example', 'news.example']);

    const { resources } = await mcp.client.listResources();
    const uri = `mail://domains/${newDomain.id}/dns`;
    t.ok(resources.some((r) => r.uri === uri), 'each domain has its DNS setup resource');
    const { resourceTemplates } = await mcp.client.listResourceTemplates();
    t.equal(resourceTemplates[0]?.uriTemplate, 'mail://domains/{id}/dns');
    const read = await mcp.client.readResource({ uri });
    const text = (read.contents[0] as { text: string }).text;
    for (const r of records.json.records) t.ok(text.includes(r.zone_file_line), `${r.type} ${r.name} in the resource`);
    await t.rejects(mcp.client.readResource({ uri: 'mail://domains/nope/dns' }), /Domain not found/);

    const failed = await mcp.call<DomainView>('verify_domain', { id: newDomain.id });
    t.equal(failed.json.status, 'failed', 'nothing published yet');
    publishRecords(dns, newDomain);
    const verified = await mcp.call<DomainView>('verify_domain', { id: newDomain.id });
    t.equal(verified.json.status, 'verified');
    t.equal((await mcp.call<DomainView>('get_domain', { id: newDomain.id })).json.status, 'verified');

    const duplicate = await mcp.call('create_domain', { name: 'news.example' });
    t.equal(duplicate.isError, true);
    t.equal(duplicate.json.code, 'conflict');
  });

  t.test('inbound: mail delivered through the MX is listed, read and answered', async (t) => {
    await addInboundDomain(app, dns, 'hooks.example', 'webhook');
    dns.set('MX', 'sender.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
    const raw = 'From: Sam <sam@sender.example>\r\nTo: support@hooks.example\r\nSubject: Where is my order?\r\nMessage-ID: <order-1@sender.example>\r\n\r\nOrder 42 has not arrived.\r\n';
    const smtp = await smtpSend(app.appliance.ports.mx.port, { from: 'sam@sender.example', to: ['support@hooks.example'] }, raw, { plain: true });
    t.ok(smtp.ok, smtp.response);

    const list = await mcp.call<Listed<{ id: number; subject: string }>>('list_inbound', { domain: 'hooks.example' });
    const item = list.json.data.find((d) => d.subject === 'Where is my order?');
    t.ok(item, 'listed');
    const one = await mcp.call<{ id: number; subject: string; text: string; from: string }>('get_inbound', { id: item!.id });
    t.equal(one.json.subject, 'Where is my order?');
    t.match(one.json.text, /Order 42 has not arrived/);

    const reply = await mcp.call<{ id: string }>('reply_to_inbound', { id: item!.id, text: 'It ships today.' });
    t.equal(reply.isError, false, JSON.stringify(reply.json));
    t.match(reply.json.id, /^em_/);
    await drain();
    const tx = sink.accepted.find((m) => m.to.includes('sam@sender.example'));
    t.ok(tx, 'the reply reached the sender');
    const parsed = await simpleParser(tx!.raw);
    t.equal(parsed.subject, 'Re: Where is my order?');
    t.equal(parsed.inReplyTo, '<order-1@sender.example>');
    t.match(parsed.text, /It ships today\./);

    const empty = await mcp.call('reply_to_inbound', { id: item!.id });
    t.same(empty.json, { error: 'Request body must include html or text', code: 'invalid_request' });
    const missing = await mcp.call('get_inbound', { id: 999_999 });
    t.same(missing.json, { error: 'Inbound email not found', code: 'not_found' });
  });

  t.test('webhooks and their failed deliveries', async (t) => {
    const receiver = createServer((_req, res) => res.writeHead(500).end('broken'));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const hook = await app.request<{ id: number }>('POST', '/webhooks', { body: { url, events: ['email.sent'] } });
    t.equal(hook.status, 201, hook.text);
    await app.request('POST', `/webhooks/${hook.body.id}/test`);

    const hooks = await mcp.call<{ webhooks: Array<{ id: string; url: string }> }>('list_webhooks');
    t.ok(hooks.json.webhooks.some((h) => h.url === url));
    const failed = await mcp.call<{ deliveries: Array<{ status: string; statusCode: number; eventType: string }>; pagination: { total: number } }>('list_webhook_deliveries', { webhook_id: hook.body.id });
    t.equal(failed.isError, false, JSON.stringify(failed.json));
    t.equal(failed.json.pagination.total, 1);
    t.match(failed.json.deliveries[0], { status: 'failed', statusCode: 500, eventType: 'webhook.test' });
    const delivered = await mcp.call<{ pagination: { total: number } }>('list_webhook_deliveries', { webhook_id: String(hook.body.id), status: 'delivered' });
    t.equal(delivered.json.pagination.total, 0);
  });

  t.test('usage and quotas', async (t) => {
    const usage = await mcp.call<{ sent: number; plan: string; limits: { domains: number | null; webhooks: number } }>('get_usage');
    t.equal(usage.isError, false);
    t.ok(usage.json.sent >= 4, `sent this month: ${usage.json.sent}`);
    t.equal(usage.json.plan, 'enterprise');
    t.same(usage.json.limits, { domains: null, api_keys: null, webhooks: 20, retention_days: null });
    const bad = await mcp.call('get_usage', { month: '2026-13' });
    t.same(bad.json, { error: 'month: must be a month as YYYY-MM', code: 'invalid_request' });
  });

  t.test('contacts, segments and topics', async (t) => {
    const created = await mcp.call<{ contact: { id: string; email: string } }>('create_contact', { email: 'Ada@Example.org', first_name: 'Ada' });
    t.equal(created.isError, false, JSON.stringify(created.json));
    t.equal(created.json.contact.email, 'Ada@example.org', 'the domain lower-cased, the local part kept');
    t.equal((await mcp.call('create_contact', { email: 'ada@example.org' })).json.code, 'conflict');
    t.same((await mcp.call('update_contact', { id: 'ada@example.org', last_name: 'Lovelace' })).json, { success: true });
    const got = await mcp.call<{ contact: { last_name: string } }>('get_contact', { id: created.json.contact.id });
    t.equal(got.json.contact.last_name, 'Lovelace');
    const listed = await mcp.call<Listed<{ email: string }>>('list_contacts', { search: 'lovelace', unsubscribed: false });
    t.same(listed.json.data.map((c) => c.email), ['Ada@example.org']);

    const segment = await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'Pioneers' } });
    await app.request('POST', `/segments/${segment.body.segment.id}/contacts`, { body: { contact_ids: [created.json.contact.id] } });
    const segments = await mcp.call<{ segments: Array<{ name: string }> }>('list_segments');
    t.same(segments.json.segments.map((s) => s.name), ['Pioneers']);
    const one = await mcp.call<{ segment: { contact_count: number } }>('get_segment', { id: segment.body.segment.id });
    t.equal(one.json.segment.contact_count, 1);
    const members = await mcp.call<Listed<{ email: string }>>('list_contacts', { segment_id: segment.body.segment.id });
    t.same(members.json.data.map((c) => c.email), ['Ada@example.org']);

    const topic = await app.request<{ topic: { id: string } }>('POST', '/subscription-topics', { body: { name: 'Product news', default_subscription: 'opt_in' } });
    const topics = await mcp.call<{ topics: Array<{ name: string }> }>('list_topics');
    t.same(topics.json.topics.map((x) => x.name), ['Product news']);
    t.equal((await mcp.call<{ topic: { name: string } }>('get_topic', { id: topic.body.topic.id })).json.topic.name, 'Product news');
  });

  t.test('templates: list, get, render', async (t) => {
    const created = await app.request<{ template: { id: string } }>('POST', '/templates', {
      body: { name: 'Welcome', subject: 'Welcome, {{ name }}', html: '<p>Hello {{ name }}, your plan is {{ plan }}.</p>' },
    });
    t.equal(created.status, 201, created.text);
    const id = created.body.template.id;
    const listed = await mcp.call<Listed<{ id: string; name: string }>>('list_templates', { published: false });
    t.same(listed.json.data.map((x) => x.name), ['Welcome']);
    t.equal((await mcp.call<{ template: { name: string } }>('get_template', { id })).json.template.name, 'Welcome');
    const rendered = await mcp.call<{ subject: string; html: string }>('render_template', { id, variables: { name: 'Ada <3', plan: 'Pro' } });
    t.equal(rendered.isError, false, JSON.stringify(rendered.json));
    t.equal(rendered.json.subject, 'Welcome, Ada <3');
    t.match(rendered.json.html, /Hello Ada &lt;3, your plan is Pro\./);
  });

  t.test('broadcasts: create a draft, send it to a segment, read its performance', async (t) => {
    const seg = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'Readers' } })).body.segment.id;
    const imported = await app.request('POST', '/contacts/import', { body: { csv: 'email,first_name\nreader1@dest.example,Rae\nreader2@dest.example,Rob', segment_id: seg } });
    t.equal(imported.status, 200, imported.text);
    const created = await mcp.call<{ broadcast: { id: string; status: string } }>('create_broadcast', {
      name: 'November news', from: 'news@acme.example', subject: 'News for {{ contact.first_name }}', html: '<p>Hi {{ contact.first_name }}</p>', segment_ids: [seg],
    });
    t.equal(created.isError, false, JSON.stringify(created.json));
    t.equal(created.json.broadcast.status, 'draft');
    const id = created.json.broadcast.id;
    const before = sink.accepted.length;
    const sent = await mcp.call<{ broadcast: { status: string } }>('send_broadcast', { id });
    t.equal(sent.isError, false, JSON.stringify(sent.json));
    for (let i = 0; i < 20 && sink.accepted.length < before + 2; i++) {
      app.clock.advance(1000);
      await drain();
    }
    const received = sink.accepted.slice(before).filter((m) => m.to.some((a) => a.startsWith('reader')));
    t.equal(received.length, 2, 'one personalised email per contact');
    t.ok(received.some((m) => /Subject: News for Rae/.test(m.raw.toString())), 'merge tags from the contact');
    t.equal((await mcp.call<{ broadcast: { id: string } }>('get_broadcast', { id })).json.broadcast.id, id);
    const listed = await mcp.call<Listed<{ id: string }>>('list_broadcasts', {});
    t.ok(listed.json.data.some((b) => b.id === id));
    const perf = await mcp.call<{ broadcasts: Array<{ id: string; recipients: number }> }>('broadcast_performance', { limit: 5 });
    t.equal(perf.isError, false, JSON.stringify(perf.json));
    t.ok(Array.isArray(perf.json.broadcasts), 'the performance list');
  });

  t.test('errors come back as tool errors with the API message and code', async (t) => {
    const missing = await mcp.call('get_email', { id: 'em_doesnotexist' });
    t.equal(missing.isError, true);
    t.same(missing.json, { error: 'Email not found', code: 'not_found' });
    t.same(missing.structured, missing.json);

    const noTo = await mcp.call('send_email', { from: 'hello@acme.example', subject: 'x', text: 'x' });
    t.same(noTo.json, { error: 'Request body is missing required fields: to', code: 'invalid_request' });
    const badAddress = await mcp.call('send_email', { from: 'hello@acme.example', to: ['not an address'], text: 'x' });
    t.same(badAddress.json, { error: 'to.0: must be a valid email address', code: 'invalid_request' });
    const unverified = await mcp.call('send_email', { from: 'x@unknown.example', to: ['a@dest.example'], text: 'x' });
    t.same(unverified.json, { error: "Domain 'unknown.example' not found for this team", code: 'unprocessable_entity' });
    const wrongType = await mcp.call('list_emails', { page: 'two' });
    t.equal(wrongType.json.code, 'invalid_request');

    // An unknown tool is a protocol error (JSON-RPC -32602), as the MCP specification says.
    await t.rejects(mcp.client.callTool({ name: 'drop_database', arguments: {} }), /Unknown tool: drop_database/);

    // Anything that is not an AppError is logged and answered internal_error, never its message or stack.
    const hidden = errorBody(app.appliance.ctx, new Error('SQLITE_CORRUPT at /var/lib/secret.db'), { test: true });
    t.same(hidden, { error: 'Internal server error', code: 'internal_error' });
    t.same(errorBody(app.appliance.ctx, new AppError(429, 'rate_limit_exceeded', 'Slow down', { 'Retry-After': '7' }), {}), { error: 'Slow down', code: 'rate_limit_exceeded', retry_after: 7 });
  });

  t.test('a sending_access key: read and send of its own emails; admin and team-wide tools refused', async (t) => {
    const issued = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'agent', permission: 'sending_access' } });
    t.equal(issued.status, 201, issued.text);
    const agent = await connectMcp(t, app, issued.body.token);

    const own = await agent.call<{ id: string }>('send_email', { from: 'agent@acme.example', to: ['carol@dest.example'], subject: 'From the agent', text: 'hi' });
    t.equal(own.isError, false, JSON.stringify(own.json));
    t.equal((await agent.call<{ id: string }>('get_email', { id: own.json.id })).json.id, own.json.id);
    const mine = await agent.call<Listed<{ publicId: string }>>('list_emails');
    t.same(mine.json.data.map((e) => e.publicId), [own.json.id], 'only the emails it sent');
    t.same((await agent.call('get_email', { id: sentId })).json, { error: 'Email not found', code: 'not_found' }, "another key's email is not found");

    const admin = await agent.call('create_domain', { name: 'agent.example' });
    t.equal(admin.isError, true);
    t.same(admin.json, { error: 'Insufficient scope: this tool needs mcp:admin (changes account state)', code: 'forbidden' });
    const teamWide = await agent.call('list_domains');
    t.same(teamWide.json, { error: 'API key does not have permission', code: 'forbidden' });
    t.equal((await agent.call('reply_to_inbound', { id: 1, text: 'x' })).json.code, 'forbidden');
    const { resources } = await agent.client.listResources();
    t.same(resources, [], 'no DNS resources for a key that may not read domains');
    await t.rejects(agent.client.readResource({ uri: `mail://domains/${newDomain.id}/dns` }), /API key does not have permission/);
    t.equal((await mcp.call<{ domains: unknown[] }>('list_domains')).json.domains.length, 3, 'nothing was created (acme, news, hooks)');
  });

  t.test('tenant isolation: another team sees none of this team', async (t) => {
    const other = await createOtherTeam(app);
    const them = await connectMcp(t, app, other.apiKey);
    t.same((await them.call('get_email', { id: sentId })).json, { error: 'Email not found', code: 'not_found' });
    t.same((await them.call<{ domains: unknown[] }>('list_domains')).json, { domains: [] });
    t.same((await them.call('get_domain', { id: newDomain.id })).json, { error: 'Domain not found', code: 'not_found' });
    t.same((await them.call('verify_domain', { id: newDomain.id })).json.code, 'not_found');
    t.equal((await them.call<Listed<unknown>>('list_inbound')).json.meta.total, 0);
    t.equal((await them.call<Listed<unknown>>('list_emails')).json.meta.total, 0);
    t.equal((await them.call<Listed<unknown>>('list_contacts')).json.meta.total, 0);
    await t.rejects(them.client.readResource({ uri: `mail://domains/${newDomain.id}/dns` }), /Domain not found/);
    const send = await them.call('send_email', { from: 'x@acme.example', to: ['a@dest.example'], text: 'x' });
    t.same(send.json, { error: "Domain 'acme.example' not found for this team", code: 'unprocessable_entity' }, "another team's domain is not theirs to send from");
  });
});
