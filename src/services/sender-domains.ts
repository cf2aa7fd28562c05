// The send path's sender-domain look-up (team + domain name → id and status), done for every single send.
// A verified domain is remembered for a few seconds per context, so that a stream of single POST /emails
// does not read the domains table once per request. Every change that domains.ts makes to a domain (create,
// update, verify, delete) forgets them all once it has settled (ctx.domainChanges); other rows (pending,
// failed, not found) are never kept, so a domain that becomes verified is usable at once. A change made by another process (the admin
// CLI) or by hand in the database is seen within SENDER_DOMAIN_TTL_MS.
import { performance } from 'node:perf_hooks';
import type { AppContext } from '../context.js';
import { readsOf } from '../db/index.js';

export const SENDER_DOMAIN_TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

export interface SenderDomain {
  id: string;
  status: string;
}

interface Remembered {
  entries: Map<string, { domain: SenderDomain; expires: number }>;
  /** Counts the committed domain changes seen (ctx.domainChanges). */
  generation: number;
}

const remembered = new WeakMap<AppContext, Remembered>();

function rememberedOf(ctx: AppContext): Remembered {
  let r = remembered.get(ctx);
  if (!r) {
    const fresh: Remembered = { entries: new Map(), generation: 0 };
    ctx.domainChanges.listen(() => {
      fresh.entries.clear();
      fresh.generation++;
    });
    remembered.set(ctx, (r = fresh));
  }
  return r;
}

/** The team's domain of that name, if any. */
export async function findSenderDomain(ctx: AppContext, teamId: string, name: string): Promise<SenderDomain | undefined> {
  const r = rememberedOf(ctx);
  const key = `${teamId}\0${name}`;
  const hit = r.entries.get(key);
  if (hit && hit.expires > performance.now()) return hit.domain;
  const generation = r.generation;
  const row = await readsOf(ctx.db)<{ id: string; status: string; team_id: string; name: string }>('domains').where({ team_id: teamId, name }).first('id', 'status');
  // Kept only when no change was committed while the read ran (it may have read the row before the change).
  if (row?.status === 'verified' && r.generation === generation) {
    if (r.entries.size >= MAX_ENTRIES) r.entries.clear();
    r.entries.set(key, { domain: { id: row.id, status: row.status }, expires: performance.now() + SENDER_DOMAIN_TTL_MS });
  } else {
    r.entries.delete(key);
  }
  return row ? { id: row.id, status: row.status } : undefined;
}
