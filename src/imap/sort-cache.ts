// What SORT and THREAD read of a message (its SortKeys, arrival and size), kept per folder between commands:
// none of it changes for a folder's UID (UIDs are not reused in a folder, folder ids not reused in the store), so
// a webmail that re-sorts its folder on each view reads only the messages it has not seen sorted before. One per
// IMAP server (keyed by its SessionDeps), bounded by an estimate of the bytes held (SORT_CACHE_BYTES): the
// folders used least recently are dropped first; a folder's rows for UIDs no longer in the session's view
// (expunged) are dropped when they outnumber the live ones.
import type { SortRow } from '../mailstore/types.js';
import type { SessionDeps } from './session.js';

/** Bytes of sort rows kept per IMAP server (estimated: strings at 2 bytes a character, plus the objects). */
export const SORT_CACHE_BYTES = 16 * 1024 * 1024;

interface FolderRows {
  rows: Map<number, SortRow>;
  bytes: number;
}

/** A row's estimated size in memory. */
export function rowBytes(r: SortRow): number {
  const k = r.keys;
  if (!k) return 120;
  let chars = k.s.length + k.f.length + k.t.length + k.c.length + k.df.length + k.dt.length + (k.m?.length ?? 0);
  for (const x of k.x) chars += x.length + 16;
  return 240 + 2 * chars;
}

export class SortRowCache {
  private readonly folders = new Map<number, FolderRows>();
  private bytes = 0;
  constructor(private readonly capacity = SORT_CACHE_BYTES) {}

  /** The rows kept of a folder (marked most recently used), or an empty map. */
  rows(folderId: number): ReadonlyMap<number, SortRow> {
    const f = this.folders.get(folderId);
    if (!f) return new Map();
    this.folders.delete(folderId);
    this.folders.set(folderId, f);
    return f.rows;
  }

  /** Keeps rows read for a folder; then, past the capacity, drops the least recently used folders. */
  add(folderId: number, rows: readonly SortRow[]): void {
    let f = this.folders.get(folderId);
    if (!f) this.folders.set(folderId, (f = { rows: new Map(), bytes: 0 }));
    for (const r of rows) {
      const old = f.rows.get(r.uid);
      const n = rowBytes(r);
      f.bytes += n - (old ? rowBytes(old) : 0);
      this.bytes += n - (old ? rowBytes(old) : 0);
      f.rows.set(r.uid, r);
    }
    for (const [id, other] of this.folders) {
      if (this.bytes <= this.capacity) break;
      this.folders.delete(id);
      this.bytes -= other.bytes;
    }
  }

  /** Drops a folder's rows for UIDs `live` does not hold, when those are more than the live ones. */
  prune(folderId: number, liveCount: number, live: (uid: number) => boolean): void {
    const f = this.folders.get(folderId);
    if (!f || f.rows.size <= 2 * liveCount) return;
    for (const [uid, r] of f.rows) {
      if (live(uid)) continue;
      f.rows.delete(uid);
      const n = rowBytes(r);
      f.bytes -= n;
      this.bytes -= n;
    }
  }

  get heldBytes(): number {
    return this.bytes;
  }
}

const caches = new WeakMap<SessionDeps, SortRowCache>();

/** The sort row cache of the IMAP server these deps belong to. */
export function sortRowsOf(deps: SessionDeps): SortRowCache {
  let c = caches.get(deps);
  if (!c) caches.set(deps, (c = new SortRowCache()));
  return c;
}
