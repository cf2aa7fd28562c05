// The operator's view of alerts: `admin alerts list` / `alerts ack` on the data directory of a running
// appliance (WAL lets both work at once), run in-process (test/cli/admin.test.ts covers the CLI as a process).
import t from 'tap';
import { createOtherTeam, startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { adminInProcess } from '../helpers/admin-cli.js';

t.setTimeout(300_000);

t.test('admin alerts list and ack', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  const other = await createOtherTeam(app);
  for (const [name, key] of [['one.example', undefined], ['two.example', other.apiKey]] as const) {
    const created = await app.request<{ id: string }>('POST', '/domains', { body: { name }, ...(key ? { key } : {}) });
    await app.request('POST', `/domains/${created.body.id}/verify`, key ? { key } : {});
  }
  await app.appliance.ctx.jobs.drain();

  const all = await adminInProcess(app.dataDir, 'alerts', 'list');
  t.equal(all.code, 0, all.stderr);
  const list = JSON.parse(all.stdout) as Array<{ team_id: string; id: number; kind: string; message: string; acknowledgedAt: string | null }>;
  t.same(list.map((a) => [a.team_id, a.kind]), [[other.teamId, 'domain_verification_failed'], [app.teamId, 'domain_verification_failed']], 'every team’s alerts, newest first');
  t.match(list[0]!.message, /two\.example/);

  const mine = JSON.parse((await adminInProcess(app.dataDir, 'alerts', 'list', '--team', app.teamId)).stdout) as typeof list;
  t.same(mine.map((a) => a.id), [list[1]!.id], '--team: one team’s');

  const ack = await adminInProcess(app.dataDir, 'alerts', 'ack', '--team', other.teamId, '--id', String(list[0]!.id));
  t.equal(ack.code, 0, ack.stderr);
  t.ok((JSON.parse(ack.stdout) as { acknowledgedAt: string }).acknowledgedAt);
  const open = JSON.parse((await adminInProcess(app.dataDir, 'alerts', 'list', '--state', 'open')).stdout) as typeof list;
  t.same(open.map((a) => a.id), [list[1]!.id], '--state open: the unacknowledged ones');
  const seen = await app.request<{ alerts: Array<{ acknowledgedAt: string | null }> }>('GET', '/alerts', { key: other.apiKey });
  t.ok(seen.body.alerts[0]!.acknowledgedAt, 'the API sees the acknowledgement');

  const bad = await adminInProcess(app.dataDir, 'alerts', 'list', '--limit', '0');
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--limit must be an integer between 1 and 1000/);
  const wrongTeam = await adminInProcess(app.dataDir, 'alerts', 'ack', '--team', app.teamId, '--id', String(list[0]!.id));
  t.equal(wrongTeam.code, 1);
  t.match(wrongTeam.stderr, /Alert not found/);
});
