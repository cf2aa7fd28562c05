// First start: an empty database gets a default team and one full_access key.
import type { AppContext } from '../../context.js';
import { modeOfToken, insertTeamWithKey, type TeamWithKey } from '../platform/index.js';
import { markEstablished } from '../sending/index.js';

export interface BootstrapResult extends TeamWithKey {
  /** The value came from MAIL_BOOTSTRAP_API_KEY, so the operator already knows it. */
  fromConfig: boolean;
}

/** Creates the default team and its first key when no team exists; null when the box is already set up. */
export async function bootstrapIfEmpty(ctx: AppContext): Promise<BootstrapResult | null> {
  return ctx.db.transaction(async (trx) => {
    if (await trx('teams').first('id')) return null;
    const configured = ctx.config.bootstrapApiKey;
    const created = await insertTeamWithKey(
      trx,
      ctx.clock.now(),
      { name: 'Default team', plan: ctx.config.defaultPlan, ownerEmail: `postmaster@${ctx.config.hostname}` },
      configured ? (modeOfToken(configured) ?? 'live') : 'live',
      configured ?? undefined,
    );
    // The operator's own team: exempt from the new-account sending rules (services/sending/quotas.ts).
    await markEstablished(trx, created.team.id);
    return { ...created, fromConfig: configured !== null };
  });
}
