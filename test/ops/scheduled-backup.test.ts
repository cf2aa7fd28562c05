// Scheduled backups (issue 37 §3): the settings validated; a run writes `mail-backup-<time>.tar.gz` into the
// backup directory (no partial file left behind), keeps the newest MAIL_BACKUP_KEEP, records its outcome for
// `admin status` and the metrics; a failed run deletes nothing, keeps the last good one's time and raises a
// `backup_failed` alert in the operator's team; a cron tick of the schedule runs one; the newest backup restores
// into an empty directory and a box started on it answers with the first box's key and email.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import parse from 'parse-prometheus-text-format';
import { ConfigError, loadConfig } from '../../src/config.js';
import { DAY } from '../../src/core/clock.js';
import { operatorStatus, restoreFrom, runScheduledBackup, scheduleBackups } from '../../src/services/housekeeping/index.js';
import { request, startTestApp } from '../helpers/app.js';

t.test('settings: a cron expression or empty, how many to keep, where', async (t) => {
  t.equal(loadConfig({}, { dataDir: '/tmp/x' }).backupSchedule, '', 'off by default');
  t.equal(loadConfig({}, { dataDir: '/tmp/x' }).backupKeep, 7);
  t.equal(loadConfig({}, { dataDir: '/tmp/x' }).backupDir, null, 'null: <data dir>/backups');
  t.equal(loadConfig({ MAIL_BACKUP_SCHEDULE: '30 2 * * *', MAIL_BACKUP_KEEP: '3', MAIL_BACKUP_DIR: '/srv/backups' }, { dataDir: '/tmp/x' }).backupSchedule, '30 2 * * *');
  t.throws(() => loadConfig({ MAIL_BACKUP_SCHEDULE: 'nightly' }, { dataDir: '/tmp/x' }), ConfigError);
  t.throws(() => loadConfig({ MAIL_BACKUP_KEEP: '0' }, { dataDir: '/tmp/x' }), ConfigError);
});

t.test('scheduled backups: write, rotate, record, alert, tick, restore', async (t) => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'mail-scheduled-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  const dir = path.join(work, 'backups');
  const app = await startTestApp(t, { config: { backupKeep: 2, backupDir: dir, metricsToken: 'metrics-token-0123456789', localDomains: ['acme.example'] } });
  const ctx = app.appliance.ctx;
  const sent = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'me@acme.example', to: ['x@dest.example'], subject: 'before', text: 'hi' } });
  t.equal(sent.status, 202, sent.text);
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'notes.txt'), 'not a scheduled backup: never rotated');

  const names: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await runScheduledBackup(ctx);
    t.ok(r.ok, r.error ?? 'ok');
    names.push(path.basename(r.file));
    app.clock.advance(DAY);
  }
  t.match(names[0], /^mail-backup-20260301T100000000Z\.tar\.gz$/, 'named by the time it was taken');
  t.same(readdirSync(dir).sort(), [...names.slice(1), 'notes.txt'], 'the newest two kept, other files untouched, nothing partial left');
  const status = await operatorStatus(ctx);
  t.match(status.backup, { schedule: 'off', dir, keep: 2, last: { ok: true, file: path.join(dir, names[2]!), deleted: [names[0]], error: null } });
  const scrape = async () => parse(await (await fetch(`${app.url}/metrics`, { headers: { authorization: 'Bearer metrics-token-0123456789' } })).text());
  const metric = (fams: ReturnType<typeof parse>, name: string, labels: Record<string, string> = {}) =>
    Number(fams.find((f) => f.name === name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value);
  let fams = await scrape();
  t.equal(metric(fams, 'mail_backup_last_success_timestamp_seconds'), Date.parse(status.backup.last!.finished_at) / 1000, 'last success time');
  t.equal(metric(fams, 'mail_backups_total', { result: 'success' }), 3);
  t.ok(metric(fams, 'mail_backup_last_size_bytes') > 0);

  // A failure: the backup directory cannot be made (a file stands in its way).
  const blocked = path.join(work, 'blocked');
  writeFileSync(blocked, 'a file');
  const failing = { ...ctx, config: { ...ctx.config, backupDir: path.join(blocked, 'backups') } };
  const failed = await runScheduledBackup(failing);
  t.equal(failed.ok, false);
  t.match(failed.error, /ENOTDIR|EEXIST|not a directory/i);
  t.equal(failed.last_success_at, status.backup.last!.last_success_at, 'the last good one is remembered');
  t.same(readdirSync(dir).sort(), [...names.slice(1), 'notes.txt'], 'nothing deleted by a failed run');
  const alerts = await app.request<{ alerts: Array<{ kind: string; data: Record<string, unknown> }> }>('GET', '/alerts');
  t.match(alerts.body.alerts.filter((a) => a.kind === 'backup_failed'), [{ kind: 'backup_failed', data: { file: failed.file, error: failed.error } }], 'the operator team is alerted (channels fan alerts out)');
  fams = await scrape();
  t.equal(metric(fams, 'mail_backups_total', { result: 'failure' }), 1);
  t.equal(metric(fams, 'mail_backup_last_failure_timestamp_seconds'), Date.parse(failed.finished_at) / 1000);
  t.match((await operatorStatus(ctx)).backup.last, { ok: false, error: failed.error });

  // The schedule itself: node-cron on real time (six fields: every second) runs one into its directory.
  const ticked = path.join(work, 'ticked');
  const stop = await scheduleBackups({ ...ctx, config: { ...ctx.config, backupSchedule: '* * * * * *', backupDir: ticked } });
  t.teardown(stop);
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && !(existsSync(ticked) && readdirSync(ticked).some((n) => n.endsWith('.tar.gz')))) await new Promise((r) => setTimeout(r, 50));
  stop();
  t.ok(readdirSync(ticked).some((n) => /^mail-backup-.*\.tar\.gz$/.test(n)), 'a tick wrote a backup');

  // The newest backup restores into an empty directory; a box on it knows the first box's key and email.
  const restored = path.join(work, 'restored');
  const manifest = await restoreFrom(path.join(dir, names[2]!), restored);
  t.same(manifest.files.slice(0, 2), ['mail.db', 'master.key']);
  const b = await startTestApp(t, { dataDir: restored });
  const asA = (p: string) => request<Record<string, unknown>>(b.url, app.apiKey, 'GET', p);
  t.equal((await asA('/api-keys')).status, 200, "the first box's API key works on the restored box");
  t.equal((await asA(`/emails/${sent.body.id}`)).status, 200, 'the email accepted before the backup is there');
});
