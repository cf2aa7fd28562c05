// The team's event log, as the API shows it.
import type { AppContext } from '../../context.js';
import { listEvents, type EventRecord } from '../../events/recorder.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';

export async function listTeamEvents(ctx: AppContext, teamId: string, types: readonly string[] | undefined, paging: PageRequest): Promise<Page<EventRecord>> {
  const { items, total } = await listEvents(ctx.db, teamId, { types }, paging.offset, paging.perPage);
  return toPage(items, total, paging);
}
