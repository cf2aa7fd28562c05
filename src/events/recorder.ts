// The durable event log. Services record an event in the same transaction as the change it describes,
// so an event exists exactly when its change does; the webhook dispatcher delivers from this table.
import { insertRows } from '../db/batcher.js';
import type { Queryable } from '../db/index.js';
import type { EventType } from './types.js';

export interface EventRecord {
  id: number;
  type: EventType;
  created_at: string;
  data: Record<string, unknown>;
}

export interface EventRow {
  id: number;
  team_id: string;
  type: EventType;
  data: string;
  created_at: string;
}

/** The row `recordEvent` writes, for callers that write many at once (`recordEvents`). */
export function eventRow(at: Date, teamId: string, type: EventType, data: Record<string, unknown>): Omit<EventRow, 'id'> {
  return { team_id: teamId, type, data: JSON.stringify(data), created_at: at.toISOString() };
}

/** Several events in one statement (chunked under SQLite's bound-variable limit), in the caller's transaction. */
export async function recordEvents(q: Queryable, rows: Array<Omit<EventRow, 'id'>>): Promise<void> {
  await insertRows(q, 'events', rows);
}

/** Events recorded in an open transaction, written together just before it commits (see `recordEvent`). */
const deferred = new WeakMap<object, Array<Omit<EventRow, 'id'>>>();

/**
 * Records one event. Inside a transaction the row is held and written, with every other event recorded in
 * that transaction, by one multi-row insert just before it commits (or releases its savepoint): a service
 * that records several events pays one statement, not one writer round trip each. A rolled-back
 * transaction writes none; a failed insert rolls the transaction back. Outside a transaction the row is
 * written at once. Events of one transaction keep their order (ids ascend in recording order); those of a
 * savepoint (a nested transaction) are written at its release, before the enclosing transaction's.
 */
export async function recordEvent(q: Queryable, at: Date, teamId: string, type: EventType, data: Record<string, unknown>): Promise<void> {
  const row = eventRow(at, teamId, type, data);
  const trx = q as Queryable & { isTransaction?: boolean; commit?: (value?: unknown) => Promise<unknown>; rollback?: (err?: unknown) => Promise<unknown> };
  if (!trx.isTransaction || typeof trx.commit !== 'function' || typeof trx.rollback !== 'function') {
    await q('events').insert(row);
    return;
  }
  const held = deferred.get(trx);
  if (held) {
    held.push(row);
    return;
  }
  const rows = [row];
  deferred.set(trx, rows);
  const commit = trx.commit.bind(trx);
  trx.commit = async (value?: unknown) => {
    deferred.delete(trx);
    try {
      await recordEvents(trx, rows);
    } catch (err) {
      return trx.rollback!(err);
    }
    return commit(value);
  };
}

export interface EventFilter {
  /** Any of these types (none: every type). */
  types?: readonly string[] | undefined;
}

/** Newest first. */
export async function listEvents(
  q: Queryable,
  teamId: string,
  filter: EventFilter,
  offset: number,
  limit: number,
): Promise<{ items: EventRecord[]; total: number }> {
  const base = q<EventRow>('events').where('team_id', teamId);
  if (filter.types?.length) base.whereIn('type', filter.types);
  const [{ n }] = (await base.clone().count({ n: '*' })) as [{ n: number }];
  const rows = await base.clone().orderBy('id', 'desc').offset(offset).limit(limit);
  return {
    total: Number(n),
    items: rows.map((r) => ({ id: r.id, type: r.type, created_at: r.created_at, data: JSON.parse(r.data) as Record<string, unknown> })),
  };
}
