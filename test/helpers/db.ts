// A scratch store for tests of the database layer: the appliance's own openDatabase (pragmas, migrations,
// read connections) on a fresh temporary directory, closed and removed when the test ends.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { openDatabase, type Db } from '../../src/db/index.js';

export async function openScratchDb(t: Test, name: string): Promise<Db> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `mail-${name}-`));
  const db = await openDatabase(dir);
  t.teardown(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}
