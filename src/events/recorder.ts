// The durable event log. Services record an event in the same transaction as the change it describes,
// so an event exists exactly when its change does; the webhook dispatcher delivers from this table.
import { chunkRows } from '../db/batcher.js';
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
  for (const chunk of chunkRows(rows)) await q('events').insert(chunk);
}

const INSERT_EVENT = 'insert into `events` (`team_id`, `type`, `data`, `created_at`) values (?, ?, ?, ?) returning `id`';

export async function recordEvent(
  q: Queryable,
  at: Date,
  teamId: string,
  type: EventType,
  data: Record<string, unknown>,
): Promise<number> {
  // One fixed statement (no query builder per event): recording is on every service's write path.
  const rows = (await q.raw(INSERT_EVENT, [teamId, type, JSON.stringify(data), at.toISOString()])) as Array<{ id: number }>;
  return rows[0]!.id;
}

export interface EventFilter {
  type?: string | undefined;
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
  if (filter.type) base.andWhere('type', filter.type);
  const [{ n }] = (await base.clone().count({ n: '*' })) as [{ n: number }];
  const rows = await base.clone().orderBy('id', 'desc').offset(offset).limit(limit);
  return {
    total: Number(n),
    items: rows.map((r) => ({ id: r.id, type: r.type, created_at: r.created_at, data: JSON.parse(r.data) as Record<string, unknown> })),
  };
}
