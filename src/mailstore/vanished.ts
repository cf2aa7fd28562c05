// Tombstones of expunged messages (QRESYNC, RFC 7162 §3.2; table mail_vanished, migration 027): per folder, UID
// ranges with the MODSEQ of the expunge that removed them. A range joins the UIDs one expunge removed when no
// message is left between them (it may span UIDs gone earlier: VANISHED (EARLIER) may name UIDs a client never
// knew), so an expunge writes a row per run, not per message. A folder keeps at most MAX_VANISHED_ROWS rows: past
// that the older half is dropped and the folder's `vanished_modseq` raised to the highest MODSEQ dropped. A client
// asking from below that mark is answered with every UID below UIDNEXT that no message has (§3.2.5.2 allows it);
// its known-uids and sequence match data narrow that down.
import type { Tx } from '../db/index.js';
import type { Core } from './rows.js';

/** Tombstone rows a folder keeps (each one expunge's run of UIDs); the older half goes when it has more. */
export const MAX_VANISHED_ROWS = 2_000;

/** Records that `uids` (ascending, of one folder, already deleted) were expunged at `modseq`. */
export async function recordVanished(trx: Tx, folderId: number, uids: readonly number[], modseq: number): Promise<void> {
  if (uids.length === 0) return;
  const first = uids[0]!;
  const last = uids[uids.length - 1]!;
  // The messages left between the first and the last expunged UID split the runs.
  const left =
    uids.length > 1
      ? ((await trx.raw('SELECT uid FROM mail_messages INDEXED BY mail_messages_state WHERE folder_id = ? AND uid > ? AND uid < ? ORDER BY uid', [folderId, first, last])) as Array<{ uid: number }>).map(
          (r) => r.uid,
        )
      : [];
  const rows: Array<{ folder_id: number; modseq: number; first_uid: number; last_uid: number }> = [];
  let start = first;
  let prev = first;
  let j = 0;
  for (let i = 1; i < uids.length; i++) {
    const uid = uids[i]!;
    while (j < left.length && left[j]! < prev) j++;
    if (j < left.length && left[j]! < uid) {
      rows.push({ folder_id: folderId, modseq, first_uid: start, last_uid: prev });
      start = uid;
    }
    prev = uid;
  }
  rows.push({ folder_id: folderId, modseq, first_uid: start, last_uid: prev });
  for (let i = 0; i < rows.length; i += 5_000) await trx('mail_vanished').insert(rows.slice(i, i + 5_000));
  const count = ((await trx('mail_vanished').where({ folder_id: folderId }).count({ n: '*' })) as Array<{ n: number }>)[0]!.n;
  if (count > MAX_VANISHED_ROWS) {
    const drop = count - MAX_VANISHED_ROWS / 2;
    const mark = (await trx.raw('SELECT MAX(modseq) AS m FROM (SELECT modseq FROM mail_vanished WHERE folder_id = ? ORDER BY modseq LIMIT ?)', [folderId, drop])) as Array<{ m: number }>;
    const upTo = mark[0]!.m;
    await trx('mail_vanished').where({ folder_id: folderId }).andWhere('modseq', '<=', upTo).delete();
    await trx('mail_folders').where({ id: folderId }).andWhere('vanished_modseq', '<', upTo).update({ vanished_modseq: upTo });
  }
}

/** Ascending disjoint ranges from possibly overlapping ones. */
export function mergeRanges(ranges: Array<[number, number]>): Array<[number, number]> {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: Array<[number, number]> = [];
  for (const [a, b] of sorted) {
    const top = out[out.length - 1];
    if (top && a <= top[1] + 1) top[1] = Math.max(top[1], b);
    else out.push([a, b]);
  }
  return out;
}

export function createVanishedOps(core: Core) {
  return {
    async vanishedSince(folderId: number, modseq: number): Promise<Array<[number, number]>> {
      const reads = core.reads;
      const folder = (await reads('mail_folders').where({ id: folderId }).first('uid_next', 'vanished_modseq')) as { uid_next: number; vanished_modseq: number } | undefined;
      if (!folder) return [];
      if (modseq < (folder.vanished_modseq ?? 0)) {
        // Pruned: every UID below UIDNEXT that no message has.
        const rows = (await reads.raw('SELECT uid FROM mail_messages INDEXED BY mail_messages_state WHERE folder_id = ? ORDER BY uid', [folderId])) as Array<{ uid: number }>;
        const out: Array<[number, number]> = [];
        let next = 1;
        for (const r of rows) {
          if (r.uid > next) out.push([next, r.uid - 1]);
          next = r.uid + 1;
        }
        if (next <= folder.uid_next - 1) out.push([next, folder.uid_next - 1]);
        return out;
      }
      const rows = (await reads('mail_vanished').where({ folder_id: folderId }).andWhere('modseq', '>', modseq).select('first_uid', 'last_uid')) as Array<{ first_uid: number; last_uid: number }>;
      return mergeRanges(rows.map((r) => [r.first_uid, r.last_uid]));
    },
  };
}
