// The periodic DNS drift check (spec: domain.dns_drift). A schedule (`MAIL_DNS_CHECK_SCHEDULE`, node-cron, daily
// by default; `startDnsCheckRound` on demand, e.g. `admin domains check-dns`) starts a round: one
// DNS_CHECK_JOB per verified domain, their run times spread evenly over `MAIL_DNS_CHECK_SPREAD_MINUTES` (at
// most 80 % of the schedule's interval), so 10,000 domains do not query at once and the queue, not a timer,
// holds the work. A check looks the watched records up through the configured resolver:
//   SPF (the record that names the box), every active DKIM key's record, and on a domain that receives mail
//   (inbound_mode other than none) the MX.
// A watched record gone or wrong moves the domain to `dns_health: degraded` (its status stays `verified`,
// and sending continues: a DNS slip should not stop a customer's mail at 3 a.m.; the team is told instead)
// with the event `domain.dns_drift` ({ ...Domain, drift: [{ record, name, expected, found, reason, since }] })
// and a `dns_drift` alert, once per newly drifted record. When every watched record is back, the domain is
// `ok` again with `domain.updated` (changes.dns_health) and a `dns_restored` alert. A look-up the DNS did not
// answer (timeout, SERVFAIL) says nothing: that record keeps its last state. A manual
// POST /domains/{id}/verify applies the strict rule (a required record missing fails the domain).
import cron from 'node-cron';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/index.js';
import { DAY, MINUTE } from '../../core/clock.js';
import type { Job } from '../../jobs/queue.js';
import { recordEvent } from '../../events/recorder.js';
import { raiseAlert } from './alerts.js';
import { checkRecord, type DnsRecord } from './domain-records.js';
import { domainView, driftOf, type DnsDrift, type DomainRow } from './domains.js';

export const DNS_CHECK_JOB = 'domain.dns_check';
/** A round's share of the schedule's interval at most: the round ends before the next begins. */
const SPREAD_SHARE = 0.8;

export interface DnsCheckPayload {
  domainId: string;
}

/** Queues one check per verified domain, spread evenly over `spreadMs` from now. Returns how many. */
export async function startDnsCheckRound(ctx: AppContext, spreadMs: number): Promise<number> {
  return ctx.db.transaction(async (trx) => {
    const ids = ((await trx('domains').where({ status: 'verified' }).orderBy('id').select('id')) as Array<{ id: string }>).map((r) => r.id);
    const start = ctx.clock.now().getTime();
    const step = ids.length > 0 ? spreadMs / ids.length : 0;
    let queued = 0;
    for (let i = 0; i < ids.length; i++) {
      const payload: DnsCheckPayload = { domainId: ids[i]! };
      // One waiting check per domain: a round that starts before the last one finished does not double it.
      const id = await ctx.jobs.enqueue(trx, DNS_CHECK_JOB, payload, { runAt: new Date(start + Math.floor(i * step)), dedupeKey: `dns_check:${ids[i]}` });
      if (id !== null) queued++;
    }
    return queued;
  });
}

/** The values at a record's name, for the drift report (never throws: nothing found is an empty list). */
async function foundAt(ctx: AppContext, record: DnsRecord): Promise<string[]> {
  try {
    if (record.type === 'MX') return (await ctx.dns.mx(record.name)).map((m) => `${m.priority} ${m.exchange}`);
    const txt = await ctx.dns.txt(record.name);
    return record.record === 'SPF' ? txt.filter((v) => /^v=spf1\b/i.test(v)) : txt;
  } catch {
    return [];
  }
}

/** The records the check watches on this domain. */
function watched(row: DomainRow, records: DnsRecord[]): DnsRecord[] {
  const inbound = (row.inbound_mode ?? 'none') !== 'none';
  return records.filter((r) => r.record === 'SPF' || (r.record === 'DKIM' && r.dkim?.state === 'active') || (r.record === 'MX' && inbound));
}

/** The DNS_CHECK_JOB handler: one domain's check. */
export async function checkDomainDns(ctx: AppContext, job: Job): Promise<void> {
  const { domainId } = job.payload as DnsCheckPayload;
  const row = (await ctx.db('domains').where({ id: domainId }).first()) as DomainRow | undefined;
  if (!row || row.status !== 'verified') return; // deleted, or no longer verified since the round began
  const view = await domainView(ctx, ctx.db, row);
  const checks = await Promise.all(
    watched(row, view.dns_records).map(async (record) => ({ record, result: await checkRecord(ctx.dns, row.name, ctx.config.hostname, record, row.dedicated_ip) })),
  );
  const at = ctx.clock.now();
  const before = driftOf(row);
  const key = (d: Pick<DnsDrift, 'record' | 'name'>) => `${d.record}:${d.name}`;
  const earlier = new Map(before.map((d) => [key(d), d]));
  const drift: DnsDrift[] = [];
  const fresh: DnsDrift[] = [];
  for (const { record, result } of checks) {
    const k = key({ record: record.record as DnsDrift['record'], name: record.name });
    if (result.transient) {
      const kept = earlier.get(k);
      if (kept) drift.push(kept); // unanswered: the last state stands
      continue;
    }
    if (result.status === 'verified') continue;
    const d: DnsDrift = earlier.get(k) ?? {
      record: record.record as DnsDrift['record'],
      name: record.name,
      expected: record.type === 'MX' ? `${record.priority ?? 10} ${record.value}` : record.value,
      found: await foundAt(ctx, record),
      reason: result.reason ?? null,
      since: at.toISOString(),
    };
    if (!earlier.has(k)) fresh.push(d);
    drift.push(d);
  }
  // Watched records that are no longer listed (a key retired meanwhile) drop out of the drift list too.
  await ctx.db.transaction(async (trx) => {
    const current = (await trx('domains').where({ id: domainId }).first()) as DomainRow | undefined;
    if (!current || current.status !== 'verified') return;
    const next = drift.length > 0 ? JSON.stringify(drift) : null;
    await trx('domains').where({ id: domainId }).update({ dns_drift: next, dns_checked_at: at.toISOString() });
    if (fresh.length === 0 && !(before.length > 0 && drift.length === 0)) return;
    const domain = await domainView(ctx, trx, { ...current, dns_drift: next });
    if (fresh.length > 0) await reportDrift(trx, at, current, domain, fresh);
    else {
      await recordEvent(trx, at, current.team_id, 'domain.updated', { ...domain, changes: { dns_health: { from: 'degraded', to: 'ok' } } } as unknown as Record<string, unknown>);
      await raiseAlert(trx, at, current.team_id, 'dns_restored', `The DNS records of ${current.name} are found again.`, { domainId, domain: current.name });
    }
  });
}

async function reportDrift(trx: Queryable, at: Date, row: DomainRow, domain: unknown, fresh: DnsDrift[]): Promise<void> {
  await recordEvent(trx, at, row.team_id, 'domain.dns_drift', { ...(domain as Record<string, unknown>), drift: fresh });
  const what = fresh.map((d) => `${d.record} (${d.name})`).join(', ');
  await raiseAlert(trx, at, row.team_id, 'dns_drift', `DNS of ${row.name} changed: ${what} no longer found as published. Sending continues; fix the record(s), the next check (or POST /domains/${row.id}/verify) clears it.`, {
    domainId: row.id,
    domain: row.name,
    drift: fresh,
  });
}

/**
 * Starts the schedule (node-cron, UTC): each tick starts a round spread over the configured minutes, at
 * most 80 % of the interval to the tick after. Returns a stop function; `off` schedules nothing.
 */
export function scheduleDnsChecks(ctx: AppContext): () => void {
  const pattern = ctx.config.dnsCheckSchedule;
  if (pattern === 'off') return () => {};
  const task = cron.schedule(
    pattern,
    async () => {
      const runs = task.getNextRuns(2);
      const interval = runs.length === 2 ? runs[1]!.getTime() - runs[0]!.getTime() : DAY;
      const spread = Math.min(ctx.config.dnsCheckSpreadMinutes * MINUTE, interval * SPREAD_SHARE);
      try {
        const n = await startDnsCheckRound(ctx, spread);
        ctx.log.info({ domains: n, spreadMinutes: Math.round(spread / MINUTE) }, 'DNS drift check: round started');
      } catch (err) {
        ctx.log.error({ err }, 'DNS drift check: could not start a round');
      }
    },
    { timezone: 'UTC', name: 'dns-drift-check', noOverlap: true },
  );
  task.unref();
  return () => void task.destroy();
}
