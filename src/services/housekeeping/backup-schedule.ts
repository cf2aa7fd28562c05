// Scheduled backups (issue 37 §3): `MAIL_BACKUP_SCHEDULE` (node-cron, UTC; empty: off) runs `backupTo` (the
// same `VACUUM INTO` + key files + tar.gz as `admin backup`) into `MAIL_BACKUP_DIR` (default
// `<data dir>/backups`) as `mail-backup-<UTC time>.tar.gz`, written beside its final name and renamed (a crash
// or a copy job never sees half a file). After a good backup only the newest `MAIL_BACKUP_KEEP` backups of
// that name pattern are kept (other files in the directory are never touched; a failed run deletes nothing).
// Each run's outcome is logged, stored in `platform_settings` (`backup.last`, read by `admin status` from its
// own process) and exposed as metrics (`mail_backup_last_success_timestamp_seconds` and the others, set again
// from the stored record at start). A failed run raises a `backup_failed` alert in the operator's team(s) (the
// teams marked established, i.e. exempt from the new-account rules: the first start's own team; else the first
// team), which the notification channels fan out.
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import cron from 'node-cron';
import type { Config } from '../../config.js';
import type { AppContext } from '../../context.js';
import { raiseAlert } from '../platform/index.js';
import { backupTo } from './backup.js';

export const BACKUP_STATE_KEY = 'backup.last';
/** The file names of scheduled backups; the UTC time in them sorts as text. */
export const SCHEDULED_BACKUP_RE = /^mail-backup-\d{8}T\d{9}Z\.tar\.gz$/;

/** One scheduled run's outcome, with the last good one carried along (`admin status` shows it). */
export interface BackupRecord {
  ok: boolean;
  started_at: string;
  finished_at: string;
  duration_seconds: number;
  /** The backup written (ok), or the one that was being written (failed). */
  file: string;
  bytes: number | null;
  error: string | null;
  /** Older scheduled backups deleted after this one (ok only). */
  deleted: string[];
  last_success_at: string | null;
  last_success_file: string | null;
}

/** Where scheduled backups go. */
export const backupDirOf = (config: Pick<Config, 'backupDir' | 'dataDir'>): string => path.resolve(config.backupDir ?? path.join(config.dataDir, 'backups'));

/** `mail-backup-20261129T103000123Z.tar.gz` for that instant. */
export const scheduledBackupName = (at: Date): string => `mail-backup-${at.toISOString().replace(/[-:.]/g, '')}.tar.gz`;

/** The last scheduled run's record, or null before the first. */
export async function lastScheduledBackup(ctx: AppContext): Promise<BackupRecord | null> {
  const row = await ctx.db('platform_settings').where({ key: BACKUP_STATE_KEY }).first<{ value: string } | undefined>('value');
  return row ? (JSON.parse(row.value) as BackupRecord) : null;
}

/** Deletes the scheduled backups in `dir` beyond the newest `keep`; returns the names deleted. */
export function rotateBackups(dir: string, keep: number): string[] {
  const names = readdirSync(dir)
    .filter((n) => SCHEDULED_BACKUP_RE.test(n))
    .sort()
    .reverse();
  const old = names.slice(keep);
  for (const n of old) rmSync(path.join(dir, n), { force: true });
  return old;
}

function showMetrics(ctx: AppContext, r: BackupRecord): void {
  const m = ctx.metrics;
  if (r.last_success_at) m.backupLastSuccess.set(Date.parse(r.last_success_at) / 1000);
  if (!r.ok) m.backupLastFailure.set(Date.parse(r.finished_at) / 1000);
  m.backupLastDuration.set(r.duration_seconds);
  if (r.ok && r.bytes !== null) m.backupLastSize.set(r.bytes);
}

/** The teams an operator-level alert goes to: those exempt from the new-account rules, else the first team. */
async function operatorTeams(ctx: AppContext): Promise<string[]> {
  const established = await ctx.db('team_send_state').where({ established: true }).orderBy('team_id').pluck('team_id');
  if (established.length > 0) return established as string[];
  const first = await ctx.db('teams').orderBy('created_at').orderBy('id').first<{ id: string } | undefined>('id');
  return first ? [first.id] : [];
}

/** One scheduled backup: write, rotate, record, alert on failure. Never throws (the outcome says what happened). */
export async function runScheduledBackup(ctx: AppContext): Promise<BackupRecord> {
  const dir = backupDirOf(ctx.config);
  const started = ctx.clock.now();
  const t0 = performance.now();
  const file = path.join(dir, scheduledBackupName(started));
  const previous = await lastScheduledBackup(ctx).catch(() => null);
  let record: BackupRecord;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const done = await backupTo(ctx, file);
    const deleted = rotateBackups(dir, ctx.config.backupKeep);
    const finished = ctx.clock.now().toISOString();
    record = { ok: true, started_at: started.toISOString(), finished_at: finished, duration_seconds: (performance.now() - t0) / 1000, file, bytes: done.bytes, error: null, deleted, last_success_at: finished, last_success_file: file };
    ctx.log.info({ file, bytes: done.bytes, deleted: deleted.length }, 'scheduled backup written');
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    record = {
      ok: false,
      started_at: started.toISOString(),
      finished_at: ctx.clock.now().toISOString(),
      duration_seconds: (performance.now() - t0) / 1000,
      file,
      bytes: null,
      error: message,
      deleted: [],
      last_success_at: previous?.last_success_at ?? null,
      last_success_file: previous?.last_success_file ?? null,
    };
    ctx.log.error({ err, file }, 'scheduled backup failed');
  }
  ctx.metrics.backups.inc({ result: record.ok ? 'success' : 'failure' });
  showMetrics(ctx, record);
  try {
    const at = ctx.clock.now();
    const teams = record.ok ? [] : await operatorTeams(ctx);
    await ctx.db.transaction(async (trx) => {
      await trx('platform_settings')
        .insert({ key: BACKUP_STATE_KEY, value: JSON.stringify(record), updated_at: at.toISOString() })
        .onConflict('key')
        .merge();
      for (const team of teams) {
        await raiseAlert(trx, at, team, 'backup_failed', `The scheduled backup to ${record.file} failed: ${record.error}. Last good backup: ${record.last_success_at ?? 'none'}.`, {
          file: record.file,
          error: record.error,
          lastSuccessAt: record.last_success_at,
        });
      }
    });
  } catch (err) {
    ctx.log.error({ err }, 'scheduled backup: could not record the outcome');
  }
  return record;
}

/**
 * Starts the schedule (node-cron, UTC; one run at a time). Returns a stop function; an empty schedule starts
 * nothing. The metrics show the stored last outcome from the start.
 */
export async function scheduleBackups(ctx: AppContext): Promise<() => void> {
  const last = await lastScheduledBackup(ctx).catch(() => null);
  if (last) showMetrics(ctx, last);
  const pattern = ctx.config.backupSchedule;
  if (pattern === '') return () => {};
  const task = cron.schedule(pattern, () => runScheduledBackup(ctx).then(() => undefined), { timezone: 'UTC', name: 'scheduled-backup', noOverlap: true });
  task.unref();
  return () => void task.destroy();
}
