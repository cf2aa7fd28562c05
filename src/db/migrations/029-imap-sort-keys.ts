// IMAP SORT and THREAD (RFC 5256, RFC 5957): each message row gets `sort_keys`, the JSON of its SortKeys
// (src/mailstore/sort-keys.ts: sent date, base subject, first addresses, display names, Message-ID and the
// References chain), written with the row from then on (delivery, APPEND, COPY/MOVE). The rows already there
// are filled in here, a page of rows at a time (their header blocks only, never the folder at once).
import type { Knex } from 'knex';
import { sortKeysOf } from '../../mailstore/sort-keys.js';

/** Rows read and updated per step of the backfill. */
const PAGE = 500;

export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE mail_messages ADD COLUMN sort_keys TEXT');
  let after: [number, number] = [0, 0];
  for (;;) {
    // Keyset paging over the primary key; the header block alone (`headerSize` of the stored summary).
    const rows = (await knex.raw(
      `SELECT m.folder_id, m.uid, substr(b.raw, 1, COALESCE(json_extract(m.summary, '$.headerSize'), length(b.raw))) AS head
         FROM mail_messages m JOIN mail_blobs b ON b.sha256 = m.blob_id
        WHERE (m.folder_id, m.uid) > (?, ?)
        ORDER BY m.folder_id, m.uid LIMIT ?`,
      [after[0], after[1], PAGE],
    )) as Array<{ folder_id: number; uid: number; head: Buffer }>;
    if (rows.length === 0) break;
    for (const r of rows) {
      await knex.raw('UPDATE mail_messages SET sort_keys = ? WHERE folder_id = ? AND uid = ?', [JSON.stringify(sortKeysOf(Buffer.from(r.head))), r.folder_id, r.uid]);
    }
    const last = rows[rows.length - 1]!;
    after = [last.folder_id, last.uid];
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE mail_messages DROP COLUMN sort_keys');
}
