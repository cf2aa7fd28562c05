// The send path's sender-domain look-up (team + domain name → id and status), done for every single send.
// A verified domain is remembered for a few seconds per context, so that a stream of single POST /emails
// does not read the domains table once per request. Every change that domains.ts makes to a domain (create,
// update, verify, delete) forgets them all once it has settled (ctx.domainChanges); other rows (pending,
// failed, not found) are never kept, so a domain that becomes verified is usable at once. A change made by
// another process (the admin CLI) or by hand in the database is seen within SENDER_DOMAIN_TTL_MS.
import type { AppContext } from '../../context.js';
import { forgetfulCachePer } from '../../core/forgetful-cache.js';
import { readsOf } from '../../db/index.js';

export const SENDER_DOMAIN_TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

export interface SenderDomain {
  id: string;
  status: string;
}

const rememberedOf = forgetfulCachePer<AppContext, string, SenderDomain | undefined>(SENDER_DOMAIN_TTL_MS, MAX_ENTRIES, (ctx) => ctx.domainChanges);

/** The team's domain of that name, if any. */
export function findSenderDomain(ctx: AppContext, teamId: string, name: string): Promise<SenderDomain | undefined> {
  return rememberedOf(ctx).get(
    `${teamId}\0${name}`,
    async () => {
      const row = await readsOf(ctx.db)<{ id: string; status: string; team_id: string; name: string }>('domains').where({ team_id: teamId, name }).first('id', 'status');
      return row ? { id: row.id, status: row.status } : undefined;
    },
    (domain) => domain?.status === 'verified',
  );
}
