// The operator's readiness view (`npm run admin -- status`, issue 37 §2): what `GET /health` does not say. Read
// from outside the running box (the CLI is its own process): each configured listener probed with a TCP connect,
// the job queue from the database, free disk under the data directory, the TLS certificate's expiry, and the last
// time the box looked up a domain's DNS records (verify, or a drift check): "never" before the first; and the
// scheduled backups' setting and last outcome (backup-schedule.ts).
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, statfsSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { AppContext } from '../../context.js';
import { TLS_CERT_FILE } from '../../core/key-material.js';
import { backupDirOf, lastScheduledBackup, type BackupRecord } from './backup-schedule.js';

const LISTENERS = [
  ['api', 'apiPort'],
  ['mx', 'mxPort'],
  ['submission', 'submissionPort'],
  ['submissions', 'submissionsPort'],
  ['imap', 'imapPort'],
  ['imaps', 'imapsPort'],
  ['pop3', 'pop3Port'],
  ['pop3s', 'pop3sPort'],
] as const;

export interface OperatorStatus {
  listeners: Array<{ name: string; address: string; port: number; state: 'listening' | 'not answering' | 'any free port' }>;
  queue: { ready: number; due: number; dead: number; oldest_due_at: string | null; oldest_due_age_seconds: number | null };
  disk: { data_dir: string; free_bytes: number; total_bytes: number; database_bytes: number };
  certificate: { file: string; self_signed: boolean; subject: string; expires_at: string; days_left: number } | { file: string | null; error: string };
  dns: { last_check_at: string | 'never'; domains: number };
  /** Scheduled backups: the setting, where they go, and the last run (null before the first). */
  backup: { schedule: string | 'off'; dir: string; keep: number; last: BackupRecord | null };
}

function probe(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export async function operatorStatus(ctx: AppContext): Promise<OperatorStatus> {
  const { config } = ctx;
  const listeners = await Promise.all(
    LISTENERS.map(async ([name, key]) => {
      const port = config[key];
      const state = port === 0 ? ('any free port' as const) : (await probe(config.bind, port)) ? ('listening' as const) : ('not answering' as const);
      return { name, address: config.bind, port, state };
    }),
  );
  const now = ctx.clock.now().getTime();
  const [counts] = (await ctx.db('jobs').select(
    ctx.db.raw("sum(case when state = 'ready' then 1 else 0 end) as ready"),
    ctx.db.raw("sum(case when state = 'ready' and run_at <= ? then 1 else 0 end) as due", [now]),
    ctx.db.raw("sum(case when state = 'dead' then 1 else 0 end) as dead"),
    ctx.db.raw("min(case when state = 'ready' and run_at <= ? then run_at end) as oldest", [now]),
  )) as Array<{ ready: number | null; due: number | null; dead: number | null; oldest: number | null }>;
  const oldest = counts?.oldest ?? null;
  const fsStat = statfsSync(config.dataDir);
  const dbFile = path.join(config.dataDir, 'mail.db');
  const certFile = config.tlsCert ?? path.join(config.dataDir, TLS_CERT_FILE);
  let certificate: OperatorStatus['certificate'];
  try {
    if (!existsSync(certFile)) throw new Error('no certificate yet (made on first start)');
    const cert = new X509Certificate(readFileSync(certFile));
    const expires = new Date(cert.validTo);
    certificate = { file: certFile, self_signed: !config.tlsCert, subject: cert.subject.replace(/\n/g, ', '), expires_at: expires.toISOString(), days_left: Math.floor((expires.getTime() - now) / 86_400_000) };
  } catch (err) {
    certificate = { file: certFile, error: (err as Error).message };
  }
  const [dns] = (await ctx.db('domains').max({ last: 'last_checked_at' }).count({ n: '*' })) as Array<{ last: string | null; n: number }>;
  return {
    listeners,
    queue: {
      ready: Number(counts?.ready ?? 0),
      due: Number(counts?.due ?? 0),
      dead: Number(counts?.dead ?? 0),
      oldest_due_at: oldest === null ? null : new Date(Number(oldest)).toISOString(),
      oldest_due_age_seconds: oldest === null ? null : Math.round((now - Number(oldest)) / 1000),
    },
    disk: { data_dir: config.dataDir, free_bytes: fsStat.bavail * fsStat.bsize, total_bytes: fsStat.blocks * fsStat.bsize, database_bytes: databaseBytes(dbFile) },
    certificate,
    dns: { last_check_at: dns?.last ?? 'never', domains: Number(dns?.n ?? 0) },
    backup: { schedule: config.backupSchedule === '' ? 'off' : config.backupSchedule, dir: backupDirOf(config), keep: config.backupKeep, last: await lastScheduledBackup(ctx) },
  };
}

/** The database's bytes on disk, its WAL included. */
function databaseBytes(file: string): number {
  let total = 0;
  for (const f of [file, `${file}-wal`]) if (existsSync(f)) total += statSync(f).size;
  return total;
}
