// Sending quotas and safety caps (spec: Limits, Sending quotas): the monthly allowance per plan, the
// external-recipient caps of new and Free accounts, safety holds, and the operator's platform-wide pause
// of new senders. Durable (SQLite), counted in the send's own transaction, figures from limits/table.ts.
//
// The send path's write transaction makes one `SendLedger`, checks each message with it just before
// writing it, and saves the ledger (counts and any new hold) with the emails.
import type { AppContext } from '../../context.js';
import type { Plan } from '../../config.js';
import { insertRows } from '../../db/batcher.js';
import { settleAll, type Queryable } from '../../db/index.js';
import { jsonObjectOf, queryJson } from '../../db/json-reads.js';
import { write } from '../../db/script.js';
import { AppError, conflict, notFound } from '../../core/errors.js';
import { domainOf } from '../../core/address.js';
import { alertInsert } from '../platform/index.js';
import { EXTERNAL_CAPS, NEW_ACCOUNT_AGE_MS, OVERAGE_EUR_PER_1000, SEND_QUOTAS } from '../../limits/table.js';

export const PAUSE_NEW_SENDERS = 'send_limit_exceeded';

export interface SendCheck {
  teamId: string;
  /** Test-mode sends are exempt from every quota and cap and are not counted. */
  isTest: boolean;
  /** Every envelope recipient (to, cc, bcc), bare addresses. */
  recipients: readonly string[];
}

interface SendStateRow {
  team_id: string;
  first_hour_count: number;
  window_start: number | null;
  window_count: number;
  window_peak: number;
  held_at: string | null;
  hold_reason: string | null;
  reviewed_at: string | null;
  established: boolean | number;
}

const emptyState = (teamId: string): SendStateRow => ({
  team_id: teamId,
  first_hour_count: 0,
  window_start: null,
  window_count: 0,
  window_peak: 0,
  held_at: null,
  hold_reason: null,
  reviewed_at: null,
  established: false,
});

/** 403: the team's sending is on hold. `fresh`: this send put it there (the ledger writes the hold). */
export class SendingHeldError extends AppError {
  constructor(
    readonly teamId: string,
    readonly reason: string,
    readonly fresh: boolean,
  ) {
    super(403, 'forbidden', holdMessage(reason));
  }
}

const holdMessage = (reason: string) => `Sending is on hold for safety review (${reason}); contact support to lift it`;

/** `YYYY-MM` of a moment, in UTC. */
export const monthOf = (at: Date) => at.toISOString().slice(0, 7);

function nextMonthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
}

const fmt = (n: number) => n.toLocaleString('en-US');

/** Some recipient is outside the team's own domains (a subdomain of a team domain is the team's own). */
function isExternal(ownDomains: readonly string[], recipients: readonly string[]): boolean {
  return recipients.some((r) => {
    const d = domainOf(r).toLowerCase();
    return !ownDomains.some((o) => d === o || d.endsWith(`.${o}`));
  });
}

export async function isNewSenderPauseOn(q: Queryable): Promise<boolean> {
  const row = await q<{ value: string }>('platform_settings').where('key', PAUSE_NEW_SENDERS).first('value');
  return row?.value === 'on';
}

/** The external-recipient window as it stands at `now`: a window past its end counts as none. */
function currentWindow(s: SendStateRow, now: number) {
  const open = s.window_start !== null && now < Number(s.window_start) + EXTERNAL_CAPS.daily.windowMs;
  return {
    open,
    start: open ? Number(s.window_start) : now,
    count: open ? s.window_count : 0,
    peak: open ? s.window_peak : Math.max(s.window_peak, s.window_count),
  };
}

interface TeamLedger {
  plan: Plan;
  createdAt: string;
  state: SendStateRow;
  ownDomains: string[];
  /** Sent this month, as stored plus what this transaction counted. */
  sent: number;
  counted: number;
  stateChanged: boolean;
  /** The reason of a hold this transaction put on the team (an alert is written with it). */
  newHold?: string;
}

/**
 * The quotas and caps of one write transaction of the send path, which may accept many emails (a batch,
 * or concurrent sends sharing a group commit). Each team's figures are read once; `check` then decides
 * every message in order against the running figures, and `save` writes the counts and any new hold in the
 * same transaction as the emails. Throws from `check` are per message: 403 (hold), 429
 * send_limit_exceeded, monthly_limit_exceeded or daily_limit_exceeded. Call `check` after idempotent
 * replays have been answered (replays do not count); test-mode sends are neither checked nor counted.
 */
export class SendLedger {
  private readonly teams = new Map<string, Promise<TeamLedger>>();
  private pause: boolean | undefined;
  private readonly at: Date;

  constructor(
    ctx: AppContext,
    private readonly trx: Queryable,
  ) {
    this.at = ctx.clock.now();
  }

  /** Reads the figures of these teams, all at once (`check` reads a team's on first use otherwise). */
  async load(teamIds: Iterable<string>): Promise<void> {
    await settleAll([...new Set(teamIds)].map((id) => this.team(id)));
  }

  private team(teamId: string): Promise<TeamLedger> {
    let t = this.teams.get(teamId);
    if (!t) this.teams.set(teamId, (t = this.read(teamId)));
    return t;
  }

  private async read(teamId: string): Promise<TeamLedger> {
    // One value: the team, its sending state, this month's count and its domains' names (a JSON read, which
    // joins the other reads of the accept transaction's first round in one statement). json() keeps a
    // subquery's JSON an object rather than text on SQLite builds that drop its subtype.
    const joined = await queryJson<{ plan: Plan; created_at: string; state: SendStateRow | null; sent: number | null; own_domains: string[] }>(
      this.trx,
      `SELECT json_object(
         'plan', t.plan, 'created_at', t.created_at,
         'state', json((SELECT ${jsonObjectOf('team_send_state', 's')} FROM team_send_state AS s WHERE s.team_id = t.id)),
         'sent', (SELECT u.sent FROM team_usage AS u WHERE u.team_id = t.id AND u.month = ?),
         'own_domains', json((SELECT json_group_array(d.name) FROM domains AS d WHERE d.team_id = t.id)))
       FROM teams AS t WHERE t.id = ? LIMIT 1`,
      [monthOf(this.at), teamId],
    );
    if (!joined) throw notFound('Team not found');
    const { plan, created_at: createdAt, sent, own_domains: own, state } = joined;
    return {
      plan,
      createdAt,
      state: state ?? emptyState(teamId),
      ownDomains: own.map((d) => d.toLowerCase()),
      sent: sent ?? 0,
      counted: 0,
      stateChanged: false,
    };
  }

  async check(input: SendCheck): Promise<void> {
    if (input.isTest) return;
    const team = await this.team(input.teamId);
    const now = this.at.getTime();
    const { state } = team;
    // An established account (the operator's own) is past every new-account rule however young, and is not
    // held for volume: only its plan's monthly quota (and on Free the daily cap) apply.
    const age = state.established ? Infinity : now - Date.parse(team.createdAt);
    if (state.held_at) throw new SendingHeldError(input.teamId, state.hold_reason ?? 'held by an operator', false);

    if (age < NEW_ACCOUNT_AGE_MS && (this.pause ??= await isNewSenderPauseOn(this.trx))) {
      throw new AppError(429, 'send_limit_exceeded', 'Sending from new accounts is paused platform-wide for now; it resumes automatically');
    }

    const quota = SEND_QUOTAS[team.plan];
    if (quota.pastAllowance === 'refuse' && team.sent >= quota.monthlyIncluded) {
      throw new AppError(
        429,
        'monthly_limit_exceeded',
        `Monthly sending limit reached: the ${team.plan} plan includes ${fmt(quota.monthlyIncluded)} emails per month; sending resumes on ${nextMonthStart(this.at).toISOString().slice(0, 10)} (UTC) or after an upgrade`,
      );
    }

    let next: SendStateRow | null = null;
    if (isExternal(team.ownDomains, input.recipients)) {
      const w = currentWindow(state, now);
      const reviewed = state.reviewed_at !== null;
      const inFirstHour = age < EXTERNAL_CAPS.firstHour.ageMs;
      const hold = (reason: string): never => {
        // The hold is written with this transaction's counts; the refused send itself is not written.
        team.state = { ...state, held_at: this.at.toISOString(), hold_reason: reason };
        team.stateChanged = true;
        team.newHold = reason;
        throw new SendingHeldError(input.teamId, reason, true);
      };
      const breach = (cap: number, reason: string, resetAt: number): never => {
        // Before an operator has looked at the account a breach holds it; afterwards the cap answers 429.
        if (!reviewed && age < EXTERNAL_CAPS.holdInsteadUntilAgeMs) hold(reason);
        throw new AppError(
          429,
          'daily_limit_exceeded',
          `Sending limit reached: at most ${cap} emails to external recipients ${cap === EXTERNAL_CAPS.firstHour.cap ? "in an account's first hour" : 'per 24 hours'}; sending resumes at ${new Date(resetAt).toISOString()}`,
        );
      };
      if (inFirstHour && state.first_hour_count >= EXTERNAL_CAPS.firstHour.cap) {
        breach(EXTERNAL_CAPS.firstHour.cap, `more than ${EXTERNAL_CAPS.firstHour.cap} external sends in the account's first hour`, Date.parse(team.createdAt) + EXTERNAL_CAPS.firstHour.ageMs);
      }
      const dailyCapApplies = team.plan === 'free' || age < EXTERNAL_CAPS.daily.paidUntilAgeMs;
      if (dailyCapApplies && w.count >= EXTERNAL_CAPS.daily.cap) {
        breach(EXTERNAL_CAPS.daily.cap, `more than ${EXTERNAL_CAPS.daily.cap} external sends in 24 hours`, w.start + EXTERNAL_CAPS.daily.windowMs);
      }
      if (!dailyCapApplies && !state.established) {
        const threshold = Math.max(EXTERNAL_CAPS.anomaly.floor, EXTERNAL_CAPS.anomaly.factor * w.peak);
        if (w.count >= threshold) hold(`more than ${fmt(threshold)} external sends in 24 hours, far above the account's history`);
      }
      next = {
        ...state,
        first_hour_count: state.first_hour_count + (inFirstHour ? 1 : 0),
        window_start: w.start,
        window_count: w.count + 1,
        window_peak: w.peak,
      };
    }

    team.sent++;
    team.counted++;
    if (next) {
      team.state = next;
      team.stateChanged = true;
    }
  }

  /** Writes what `check` counted (and any hold it decided), in the same transaction. */
  async save(): Promise<void> {
    const month = monthOf(this.at);
    const writes: Array<PromiseLike<unknown>> = [];
    for (const [teamId, pending] of this.teams) {
      const t = await pending.catch(() => undefined); // a team that could not be read counted nothing
      if (!t) continue;
      if (t.counted > 0) {
        writes.push(write(this.trx, 'INSERT INTO team_usage (team_id, month, sent) VALUES (?, ?, ?) ON CONFLICT(team_id, month) DO UPDATE SET sent = sent + excluded.sent', [teamId, month, t.counted]));
      }
      // Alerts (platform/alerts.ts; notifications fans them out): the month's count crossing 80 % and 100 %
      // of the plan's allowance (once a month each, by the dedupe key), and a hold put on now.
      const allowance = SEND_QUOTAS[t.plan].monthlyIncluded;
      if (t.counted > 0 && Number.isFinite(allowance) && allowance > 0) {
        const before = t.sent - t.counted;
        for (const [share, kind] of [[0.8, 'quota_80'], [1, 'quota_100']] as const) {
          const mark = Math.ceil(allowance * share);
          if (before >= mark || t.sent < mark) continue;
          const past = SEND_QUOTAS[t.plan].pastAllowance === 'refuse' ? 'further sends are refused until next month or an upgrade' : 'sends past it are billed as overage';
          const message = kind === 'quota_80' ? `${fmt(t.sent)} of the ${fmt(allowance)} emails included this month (${month}) are used: 80 % of the ${t.plan} plan's allowance.` : `The ${fmt(allowance)} emails included this month (${month}) are used: ${past}.`;
          const a = alertInsert(this.at, teamId, kind, message, { month, used: t.sent, allowance, plan: t.plan }, { dedupeKey: `${kind}:${month}` });
          writes.push(write(this.trx, a.sql, a.bindings));
        }
      }
      if (t.newHold !== undefined) {
        const a = alertInsert(this.at, teamId, 'sending_on_hold', `Sending is on hold for safety review: ${t.newHold}. Contact the operator to lift it.`, { reason: t.newHold, heldAt: this.at.toISOString() });
        writes.push(write(this.trx, a.sql, a.bindings));
      }
      if (t.stateChanged) {
        // An upsert: every column but the key takes the new value (knex's onConflict().merge()).
        const set = Object.keys(t.state).filter((c) => c !== 'team_id').map((c) => `${c} = excluded.${c}`);
        writes.push(insertRows(this.trx, 'team_send_state', [t.state], ` ON CONFLICT (team_id) DO UPDATE SET ${set.join(', ')}`));
      }
    }
    await settleAll(writes);
  }
}

/** True for the refusals SMTP submission answers with 451 (temporary): holds and the quota codes. */
export function isSendQuotaRefusal(err: unknown): err is AppError {
  if (!(err instanceof AppError)) return false;
  return err instanceof SendingHeldError || ['monthly_limit_exceeded', 'daily_limit_exceeded', 'send_limit_exceeded'].includes(err.code);
}

/** The SMTP reply for a send refused by a quota or cap (spec: SMTP submission reports them as 451). */
export const QUOTA_SMTP_REPLY = { code: 451, enhanced: '4.7.1' } as const;

// ---- operator actions ----

export interface HoldView {
  team_id: string;
  on_hold: boolean;
  held_at: string | null;
  hold_reason: string | null;
  reviewed_at: string | null;
}

export async function getHold(ctx: AppContext, teamId: string): Promise<HoldView> {
  const s = (await ctx.db<SendStateRow>('team_send_state').where('team_id', teamId).first()) ?? emptyState(teamId);
  return { team_id: teamId, on_hold: s.held_at !== null, held_at: s.held_at, hold_reason: s.hold_reason, reviewed_at: s.reviewed_at };
}

/**
 * Lifts a team's hold (admin CLI). The account counts as reviewed from then on: a later breach of the
 * first-hour or daily cap answers 429 daily_limit_exceeded instead of holding again, and the anomaly
 * rule measures against the window that was held.
 */
export async function releaseHold(ctx: AppContext, teamId: string): Promise<HoldView> {
  await ctx.db.transaction(async (trx) => {
    if (!(await trx('teams').where('id', teamId).first('id'))) throw notFound('Team not found');
    const s = (await trx<SendStateRow>('team_send_state').where('team_id', teamId).first()) ?? emptyState(teamId);
    // Releasing a team that is not held would mark it reviewed, and a reviewed team is never held again.
    if (s.held_at === null) throw conflict('Team is not on hold: nothing to release');
    const next: SendStateRow = {
      ...s,
      held_at: null,
      hold_reason: null,
      reviewed_at: ctx.clock.now().toISOString(),
      window_peak: Math.max(s.window_peak, s.window_count),
    };
    await trx('team_send_state').insert(next).onConflict('team_id').merge();
  });
  return getHold(ctx, teamId);
}

/** Marks the operator's own account (the bootstrap team): the new-account rules do not apply to it. */
export async function markEstablished(q: Queryable, teamId: string): Promise<void> {
  await q('team_send_state').insert({ ...emptyState(teamId), established: true }).onConflict('team_id').merge({ established: true });
}

/** The operator's platform-wide pause of sending from accounts younger than 72 hours. */
export async function setNewSenderPause(ctx: AppContext, on: boolean): Promise<{ pause_new_senders: boolean }> {
  await ctx.db('platform_settings')
    .insert({ key: PAUSE_NEW_SENDERS, value: on ? 'on' : 'off', updated_at: ctx.clock.now().toISOString() })
    .onConflict('key')
    .merge();
  return { pause_new_senders: on };
}

// ---- usage ----

export interface Usage {
  team_id: string;
  plan: Plan;
  /** YYYY-MM, UTC. */
  month: string;
  sent: number;
  /** Messages included in the plan this month; null: unlimited. */
  allowance: number | null;
  overage: number;
  overage_cost_eur: number;
  /** What happens past the allowance: refused (Free), billed (paid), or nothing (Enterprise). */
  past_allowance: 'refused' | 'billed' | 'unlimited';
  on_hold: boolean;
  hold_reason: string | null;
  external: {
    window_started_at: string | null;
    window_ends_at: string | null;
    sent: number;
    /** The cap in force now, or null when none applies (paid plans after 72 hours). */
    cap: number | null;
  };
}

export async function getUsage(ctx: AppContext, teamId: string, month?: string): Promise<Usage> {
  const at = ctx.clock.now();
  const team = await ctx.db<{ plan: Plan; created_at: string }>('teams').where('id', teamId).first('plan', 'created_at');
  if (!team) throw notFound('Team not found');
  const m = month ?? monthOf(at);
  const row = await ctx.db<{ team_id: string; month: string; sent: number }>('team_usage').where({ team_id: teamId, month: m }).first('sent');
  const sent = row?.sent ?? 0;
  const quota = SEND_QUOTAS[team.plan];
  const allowance = Number.isFinite(quota.monthlyIncluded) ? quota.monthlyIncluded : null;
  const overage = quota.pastAllowance === 'bill' && allowance !== null ? Math.max(0, sent - allowance) : 0;
  const state = (await ctx.db<SendStateRow>('team_send_state').where('team_id', teamId).first()) ?? emptyState(teamId);
  const w = currentWindow(state, at.getTime());
  const age = state.established ? Infinity : at.getTime() - Date.parse(team.created_at);
  const cap =
    age < EXTERNAL_CAPS.firstHour.ageMs
      ? EXTERNAL_CAPS.firstHour.cap
      : team.plan === 'free' || age < EXTERNAL_CAPS.daily.paidUntilAgeMs
        ? EXTERNAL_CAPS.daily.cap
        : null;
  return {
    team_id: teamId,
    plan: team.plan,
    month: m,
    sent,
    allowance,
    overage,
    overage_cost_eur: Math.round(overage * OVERAGE_EUR_PER_1000 * 100 / 1000) / 100,
    past_allowance: quota.pastAllowance === 'refuse' ? 'refused' : quota.pastAllowance === 'bill' ? 'billed' : 'unlimited',
    on_hold: state.held_at !== null,
    hold_reason: state.hold_reason,
    external: {
      window_started_at: w.open ? new Date(w.start).toISOString() : null,
      window_ends_at: w.open ? new Date(w.start + EXTERNAL_CAPS.daily.windowMs).toISOString() : null,
      sent: w.count,
      cap,
    },
  };
}
