// Backups that restore (issue 37 §3). A backup is one gzipped tar file holding a consistent online copy of the
// database (SQLite's `VACUUM INTO`: one read transaction, so a snapshot of a committed state, taken while the box
// keeps writing; never a file copy of a live WAL database), the master key that unseals the stored DKIM keys and
// webhook secrets, the self-signed TLS pair when the box made one, and `backup.json` (format, version, time,
// files). Restore unpacks it into an empty data directory, never over a non-empty one.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, copyFileSync, renameSync } from 'node:fs';
import path from 'node:path';

/** tar, loaded by a backup or a restore. */
const loadTar = () => import('tar');
import type { AppContext } from '../../context.js';
import { DB_FILE, vacuumInto } from '../../db/index.js';
import { MASTER_KEY_FILE, TLS_CERT_FILE, TLS_KEY_FILE } from '../../core/key-material.js';

export const BACKUP_FORMAT = 'mail-appliance-backup';
export const BACKUP_VERSION = 1;
const MANIFEST = 'backup.json';

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  version: number;
  created_at: string;
  files: string[];
}

export interface BackupResult extends BackupManifest {
  file: string;
  bytes: number;
}

/** Writes the backup of `ctx`'s data directory to `file` (replaced if it exists, written beside it first and renamed). */
export async function backupTo(ctx: AppContext, file: string): Promise<BackupResult> {
  const target = path.resolve(file);
  const work = mkdtempSync(path.join(path.dirname(target), '.mail-backup-'));
  try {
    // VACUUM INTO: a consistent copy of the live database, compacted, without its WAL (its own connection).
    await vacuumInto(ctx.config.dataDir, path.join(work, DB_FILE));
    const files = [DB_FILE];
    for (const name of [MASTER_KEY_FILE, TLS_CERT_FILE, TLS_KEY_FILE]) {
      const from = path.join(ctx.config.dataDir, name);
      if (existsSync(from)) {
        copyFileSync(from, path.join(work, name));
        files.push(name);
      }
    }
    if (!files.includes(MASTER_KEY_FILE)) throw new Error(`${path.join(ctx.config.dataDir, MASTER_KEY_FILE)} is missing: nothing sealed could be restored`);
    const manifest: BackupManifest = { format: BACKUP_FORMAT, version: BACKUP_VERSION, created_at: ctx.clock.now().toISOString(), files };
    writeFileSync(path.join(work, MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
    const partial = path.join(work, 'backup.tar.gz');
    const tar = await loadTar();
    await tar.create({ gzip: true, file: partial, cwd: work, portable: true }, [MANIFEST, ...files]);
    chmodSync(partial, 0o600); // it holds the master key
    // Written beside the target, then renamed over it (one directory, one file system): a reader or a crash
    // sees the old file or the whole new one, never a part.
    renameSync(partial, target);
    return { ...manifest, file: target, bytes: statSync(target).size };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Unpacks the backup `file` into `dataDir`, which must be missing or empty. Returns the backup's manifest. */
export async function restoreFrom(file: string, dataDir: string): Promise<BackupManifest & { data_dir: string }> {
  const dir = path.resolve(dataDir);
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new Error(`${dir} is not empty: restore only into an empty data directory`);
  const entries: string[] = [];
  const tar = await loadTar();
  await tar.list({ file, onReadEntry: (e) => void entries.push(e.path) });
  if (!entries.includes(MANIFEST)) throw new Error(`${file} is not a backup of this box (no ${MANIFEST})`);
  const allowed = new Set([MANIFEST, DB_FILE, MASTER_KEY_FILE, TLS_CERT_FILE, TLS_KEY_FILE]);
  const stray = entries.filter((e) => !allowed.has(e));
  if (stray.length > 0) throw new Error(`${file} holds unexpected entries: ${stray.join(', ')}`);
  mkdirSync(dir, { recursive: true });
  await tar.extract({ file, cwd: dir });
  const manifest = JSON.parse(readFileSync(path.join(dir, MANIFEST), 'utf8')) as BackupManifest;
  rmSync(path.join(dir, MANIFEST));
  if (manifest.format !== BACKUP_FORMAT || manifest.version > BACKUP_VERSION) throw new Error(`${file}: unsupported backup format ${manifest.format} ${manifest.version}`);
  for (const name of [MASTER_KEY_FILE, TLS_KEY_FILE]) if (existsSync(path.join(dir, name))) chmodSync(path.join(dir, name), 0o600);
  return { ...manifest, data_dir: dir };
}
