// Teams: the tenant every resource belongs to.
import type { AppContext } from '../../context.js';
import type { Plan } from '../../config.js';
import type { Queryable } from '../../db/index.js';
import { notFound } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { insertApiKey, type IssuedKey, type KeyMode } from './api-keys.js';

export interface Team {
  id: string;
  name: string;
  plan: Plan;
  owner_email: string;
  created_at: string;
}

export interface CreateTeamInput {
  name: string;
  plan: Plan;
  ownerEmail: string;
}

export interface TeamWithKey {
  team: Team;
  issued: IssuedKey;
}

/** A team and its first full_access key, in the caller's transaction. `token` lets an operator choose the value. */
export async function insertTeamWithKey(q: Queryable, at: Date, input: CreateTeamInput, keyMode: KeyMode = 'live', token?: string): Promise<TeamWithKey> {
  const team: Team = { id: newId(), name: input.name, plan: input.plan, owner_email: input.ownerEmail, created_at: at.toISOString() };
  await q('teams').insert(team);
  const issued = await insertApiKey(q, at, team, { name: 'Default key', permission: 'full_access', mode: keyMode }, token);
  return { team, issued };
}

export async function createTeamWithKey(ctx: AppContext, input: CreateTeamInput): Promise<TeamWithKey> {
  return ctx.db.transaction((trx) => insertTeamWithKey(trx, ctx.clock.now(), input));
}

/** Oldest first. */
export async function listTeams(ctx: AppContext): Promise<Team[]> {
  return ctx.db<Team>('teams').select('id', 'name', 'plan', 'owner_email', 'created_at').orderByRaw('created_at ASC, rowid ASC');
}

export async function getTeam(ctx: AppContext, id: string): Promise<Team> {
  const team = await ctx.db<Team>('teams').where('id', id).first('id', 'name', 'plan', 'owner_email', 'created_at');
  if (!team) throw notFound('Team not found');
  return team;
}

/**
 * Moves a team to another plan. Quotas read the plan per send, so the change applies at once; the API's rate
 * limits read it with the caller's key, remembered for up to a second in another process (api-keys.ts).
 */
export async function setTeamPlan(ctx: AppContext, id: string, plan: Plan): Promise<Team> {
  const n = await ctx.apiKeyChanges.after(ctx.db('teams').where('id', id).update({ plan }));
  if (n === 0) throw notFound('Team not found');
  return getTeam(ctx, id);
}
