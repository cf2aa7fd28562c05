// DMARC aggregate reports received at the rua address the box publishes for each domain
// (`rua=mailto:dmarc-reports@<domain>`, services/platform/domain-records.ts): stored once per (domain, reporting
// organisation, report id) and listed by GET /domains/{id}/dmarc/reports with the spec's own paging:
// `page` and `perPage` (camelCase), default 20, max 100, out-of-range values clamped, `per_page` ignored.
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/index.js';
import { notFound } from '../../core/errors.js';
import { raiseAlert } from '../platform/index.js';

export interface DmarcRecord {
  source_ip: string;
  count: number;
  disposition: string;
  /** policy_evaluated results (aligned pass or fail). */
  dkim: string;
  spf: string;
  reasons: Array<{ type: string; comment: string | null }>;
  header_from: string | null;
  envelope_from: string | null;
  envelope_to: string | null;
  auth_results: {
    dkim: Array<{ domain: string; selector: string | null; result: string }>;
    spf: Array<{ domain: string; scope: string | null; result: string }>;
  };
}

export interface DmarcAggregateReport {
  orgName: string;
  orgEmail: string | null;
  reportId: string;
  /** ISO 8601 */
  dateBegin: string;
  dateEnd: string;
  policy: { domain: string; adkim: string | null; aspf: string | null; p: string | null; sp: string | null; pct: number | null };
  records: DmarcRecord[];
}

export interface DmarcReportView {
  id: number;
  org_name: string;
  org_email: string | null;
  report_id: string;
  date_begin: string;
  date_end: string;
  policy_published: DmarcAggregateReport['policy'];
  /** Messages the report covers (sum of the rows' counts), and how many of them passed DMARC. */
  message_count: number;
  pass_count: number;
  fail_count: number;
  records: DmarcRecord[];
  received_at: string;
}

interface ReportRow {
  id: number;
  team_id: string;
  domain_id: string;
  org_name: string;
  org_email: string | null;
  report_id: string;
  date_begin: string;
  date_end: string;
  policy: string;
  records: string;
  message_count: number;
  pass_count: number;
  fail_count: number;
  received_at: string;
}

export type StoreReportResult = 'stored' | 'duplicate' | 'other_domain';

/**
 * Stores a report received for `domain` (in the caller's transaction). A report about another domain than
 * the one (or a parent of the one) it was sent to is not stored; a report already stored is a duplicate.
 */
export async function storeDmarcReport(q: Queryable, at: Date, domain: { id: string; teamId: string; name: string }, report: DmarcAggregateReport): Promise<StoreReportResult> {
  const about = report.policy.domain;
  if (about !== domain.name && !about.endsWith(`.${domain.name}`)) return 'other_domain';
  const count = (r: DmarcRecord) => r.count;
  const pass = report.records.filter((r) => r.dkim === 'pass' || r.spf === 'pass').reduce((n, r) => n + count(r), 0);
  const total = report.records.reduce((n, r) => n + count(r), 0);
  const key = { domain_id: domain.id, org_name: report.orgName.slice(0, 255), report_id: report.reportId.slice(0, 255) };
  if (await q('dmarc_reports').where(key).first('id')) return 'duplicate';
  await q('dmarc_reports').insert({
    team_id: domain.teamId,
    ...key,
    org_email: report.orgEmail?.slice(0, 255) ?? null,
    date_begin: report.dateBegin,
    date_end: report.dateEnd,
    policy: JSON.stringify(report.policy),
    records: JSON.stringify(report.records),
    message_count: total,
    pass_count: pass,
    fail_count: total - pass,
    received_at: at.toISOString(),
  });
  await alertOnFailures(q, at, domain, report, total, total - pass);
  return 'stored';
}

/** A report's failure rate above this raises `dmarc_failures` (besides any new failing source). */
export const DMARC_ALERT_FAIL_RATE = 0.1;
/** Earlier reports of the domain looked at to tell a new source from a known one. */
const KNOWN_SOURCE_REPORTS = 100;

/**
 * The `dmarc_failures` alert: the report shows messages failing DMARC (neither aligned DKIM nor SPF) from a
 * source address no earlier report of the domain named (a new unauthorised sender, or a forger), or a share
 * of failing messages above DMARC_ALERT_FAIL_RATE.
 */
async function alertOnFailures(q: Queryable, at: Date, domain: { id: string; teamId: string; name: string }, report: DmarcAggregateReport, total: number, failing: number): Promise<void> {
  if (failing === 0) return;
  const bySource = new Map<string, number>();
  for (const r of report.records) if (r.dkim !== 'pass' && r.spf !== 'pass') bySource.set(r.source_ip, (bySource.get(r.source_ip) ?? 0) + r.count);
  const earlier = (await q('dmarc_reports').where({ domain_id: domain.id }).andWhereNot({ report_id: report.reportId.slice(0, 255) }).orderBy('id', 'desc').limit(KNOWN_SOURCE_REPORTS).select('records')) as Array<{ records: string }>;
  const known = new Set<string>();
  for (const e of earlier) for (const r of JSON.parse(e.records) as DmarcRecord[]) known.add(r.source_ip);
  const fresh = [...bySource.keys()].filter((ip) => !known.has(ip));
  const rate = total > 0 ? failing / total : 0;
  if (fresh.length === 0 && rate <= DMARC_ALERT_FAIL_RATE) return;
  const sources = [...bySource].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([ip, count]) => ({ ip, count, new: !known.has(ip) }));
  const why = fresh.length > 0 ? `${fresh.length} source(s) not seen before (${fresh.slice(0, 3).join(', ')})` : `${Math.round(rate * 100)} % of the messages`;
  await raiseAlert(q, at, domain.teamId, 'dmarc_failures', `DMARC report from ${report.orgName} for ${domain.name}: ${failing} of ${total} messages failed DMARC, ${why}.`, {
    domainId: domain.id,
    domain: domain.name,
    reportId: report.reportId,
    orgName: report.orgName,
    failing,
    total,
    sources,
  });
}

function toView(r: ReportRow): DmarcReportView {
  return {
    id: r.id,
    org_name: r.org_name,
    org_email: r.org_email,
    report_id: r.report_id,
    date_begin: r.date_begin,
    date_end: r.date_end,
    policy_published: JSON.parse(r.policy) as DmarcAggregateReport['policy'],
    message_count: r.message_count,
    pass_count: r.pass_count,
    fail_count: r.fail_count,
    records: JSON.parse(r.records) as DmarcRecord[],
    received_at: r.received_at,
  };
}

export const DMARC_DEFAULT_PER_PAGE = 20;
export const DMARC_MAX_PER_PAGE = 100;

/** The spec's odd paging: integers clamped into range; anything that is not an integer falls back to the default. */
export function dmarcPaging(query: Record<string, string | string[] | undefined>): { page: number; perPage: number } {
  const int = (v: string | string[] | undefined): number | undefined => {
    const s = Array.isArray(v) ? v[0] : v;
    return s !== undefined && /^\s*-?\d{1,15}\s*$/.test(s) ? Number(s) : undefined;
  };
  const page = Math.min(Math.max(int(query.page) ?? 1, 1), 1_000_000_000);
  const perPage = Math.min(Math.max(int(query.perPage) ?? DMARC_DEFAULT_PER_PAGE, 1), DMARC_MAX_PER_PAGE);
  return { page, perPage };
}

/** Newest first. 404 when the domain is not the team's. */
export async function listDmarcReports(ctx: AppContext, teamId: string, domainId: string, paging: { page: number; perPage: number }) {
  const domain = await ctx.db('domains').where({ id: domainId, team_id: teamId }).first('id');
  if (!domain) throw notFound('Domain not found');
  const base = ctx.db<ReportRow>('dmarc_reports').where({ domain_id: domainId });
  const [{ n }] = (await base.clone().count({ n: '*' })) as [{ n: number }];
  const rows = await base.clone().orderBy('id', 'desc').offset((paging.page - 1) * paging.perPage).limit(paging.perPage);
  const total = Number(n);
  return {
    reports: rows.map(toView),
    pagination: { page: paging.page, perPage: paging.perPage, total, totalPages: total === 0 ? 0 : Math.ceil(total / paging.perPage) },
  };
}
