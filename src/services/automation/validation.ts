// Email validation (spec: POST /email-validations, /batch): before sending, what a sender can act on — one
// `result` and the checks behind it. The checks: syntax (RFC 5321/5322, IDN, SMTPUTF8), where the domain's mail
// goes (MX, A/AAAA fallback, null MX) through the box's resolver, a disposable-mail domain, a role account, a
// likely typo of a big provider, and the team's suppression list. The remote server is never asked about the
// mailbox (no SMTP RCPT probing: it gets the box's address blocklisted), so `deliverable` means "a well-formed
// address at a domain that takes mail, with nothing against it", not "the mailbox exists".
import type { AppContext } from '../../context.js';
import { Batcher } from '../../db/batcher.js';
import { readsOf } from '../../db/index.js';
import { addressKey } from '../../core/address.js';
import { suppressedAmong } from '../audience/index.js';
import { routeRecipient } from '../inbound/index.js';
import { checkSyntax, isDisposableDomain, isRoleAccount, suggestDomain, type SyntaxCheck } from './address-checks.js';
import { mailRoutes, NOT_CHECKED, type MailRoute } from './mail-routes.js';

/**
 * deliverable: send. risky: the address takes mail but something speaks against it (see `reason`): ask again or
 * send with care. undeliverable: do not send. unknown: the DNS did not answer; try again later.
 */
export const VALIDATION_RESULTS = ['deliverable', 'risky', 'undeliverable', 'unknown'] as const;
export type ValidationResult = (typeof VALIDATION_RESULTS)[number];

/** The one check that decided the result, in the order they are weighed (see `verdict`). */
export const VALIDATION_REASONS = [
  'invalid_syntax', 'suppressed', 'null_mx', 'no_mail_server', 'dns_unavailable', 'disposable', 'possible_typo', 'role_account', 'mail_server_found',
] as const;
export type ValidationReason = (typeof VALIDATION_REASONS)[number];

/** Addresses one batch request may hold (the spec leaves the figure to us: a signup list's page, or a CSV's chunk). */
export const MAX_VALIDATION_BATCH = 1000;

export interface EmailValidation {
  success: true;
  /** As given. */
  email: string;
  /** The local part as given, the domain lower-cased and in ASCII; null when the syntax is not valid. */
  normalized_email: string | null;
  user: string | null;
  /** ASCII (IDNA) form. */
  domain: string | null;
  result: ValidationResult;
  reason: ValidationReason;
  /** The address with the domain that was probably meant (`ann@gmial.com` → `ann@gmail.com`), else null. */
  did_you_mean: string | null;
  checks: {
    syntax: Pick<SyntaxCheck, 'valid' | 'message' | 'smtputf8' | 'idn'>;
    mx: MailRoute;
    disposable: boolean;
    role: boolean;
    typo: boolean;
    suppressed: boolean;
  };
}

type Checks = EmailValidation['checks'];

/** The result and its reason: anything that makes sending pointless first, then what is unknown, then the risks. */
function verdict(c: Checks): { result: ValidationResult; reason: ValidationReason } {
  if (!c.syntax.valid) return { result: 'undeliverable', reason: 'invalid_syntax' };
  // The box itself refuses to send there (sending/suppressions.ts).
  if (c.suppressed) return { result: 'undeliverable', reason: 'suppressed' };
  if (c.mx.status === 'null_mx') return { result: 'undeliverable', reason: 'null_mx' };
  if (c.mx.status === 'no_records') return { result: 'undeliverable', reason: 'no_mail_server' };
  if (c.mx.status === 'lookup_failed') return { result: 'unknown', reason: 'dns_unavailable' };
  if (c.disposable) return { result: 'risky', reason: 'disposable' };
  if (c.typo) return { result: 'risky', reason: 'possible_typo' };
  if (c.role) return { result: 'risky', reason: 'role_account' };
  return { result: 'deliverable', reason: 'mail_server_found' };
}

/**
 * Requests whose suppression reads share one statement at most: 16 batches of 1,000 addresses stay well under
 * SQLite's 32,766 bound values.
 */
const READS_PER_STATEMENT = 16;
/** Domains whose typo suggestion is remembered (they are asked about again and again); past it, all forgotten. */
const MAX_SUGGESTIONS = 10_000;

interface SuppressionRead {
  teamId: string;
  addresses: string[];
}

/** What validation keeps per context: the suppression reader and the suggestions already worked out. */
interface ValidationState {
  /**
   * The suppression reads of requests that arrive while one is being read (or in the same turn) go as one
   * statement: each statement is a trip through libuv's thread pool, and one per request was the largest cost
   * of a single validation (bench:validation's profile). Answers each read with its team's suppressed keys among
   * every address read with it.
   */
  suppressions: Batcher<SuppressionRead, Set<string>>;
  suggestions: Map<string, string | null>;
}

const states = new WeakMap<AppContext, ValidationState>();

function stateOf(ctx: AppContext): ValidationState {
  let state = states.get(ctx);
  if (!state) {
    const suppressions = new Batcher<SuppressionRead, Set<string>>(async (reads) => {
      const byTeam = new Map<string, string[]>();
      for (const r of reads) {
        const addresses = byTeam.get(r.teamId);
        if (addresses) addresses.push(...r.addresses);
        else byTeam.set(r.teamId, [...r.addresses]);
      }
      // The teams' reads, asked in one turn, are one statement too (db/json-reads.ts).
      const sets = await Promise.all([...byTeam].map(async ([teamId, addresses]) => [teamId, await suppressedAmong(readsOf(ctx.db), teamId, addresses)] as const));
      const found = new Map(sets);
      return reads.map((r) => found.get(r.teamId)!);
    }, READS_PER_STATEMENT);
    states.set(ctx, (state = { suppressions, suggestions: new Map() }));
  }
  return state;
}

function suggestionFor(state: ValidationState, domain: string): string | null {
  let suggestion = state.suggestions.get(domain);
  if (suggestion === undefined) {
    suggestion = suggestDomain(domain);
    if (state.suggestions.size >= MAX_SUGGESTIONS) state.suggestions.clear();
    state.suggestions.set(domain, suggestion);
  }
  return suggestion;
}

/**
 * The addresses among `valid` that the box itself takes mail for (a mailbox, an alias or catch-all, an inbound
 * webhook route of a domain verified on the box): the box delivers them locally, whatever the public DNS says
 * (a trial without published MX records, a domain declared with `--trusted` or MAIL_LOCAL_DOMAINS). Without
 * this, the box's own validation and its signup forms refused its own mailboxes as "does not receive mail".
 * One read of the verified domains among the batch's; routes only for their addresses (the directory keeps them).
 */
async function servedByTheBox(ctx: AppContext, valid: readonly SyntaxCheck[]): Promise<Set<string>> {
  const served = new Set<string>();
  const domains = [...new Set(valid.map((s) => s.domain!))];
  if (domains.length === 0) return served;
  const rows = await readsOf(ctx.db)<{ name: string }>('domains').whereIn('name', domains).andWhere('status', 'verified').select('name');
  if (rows.length === 0) return served;
  const verified = new Set(rows.map((r) => r.name));
  for (const s of valid) {
    if (!verified.has(s.domain!) || served.has(s.address!)) continue;
    const route = await routeRecipient(ctx, ctx.mailstore, s.address!);
    if (route.kind === 'mailbox' || route.kind === 'mailbox_full' || (route.kind === 'webhook' && !route.feedbackLoop)) served.add(s.address!);
  }
  return served;
}

/** The route of an address the box serves itself: its own host name, as an MX would name it. */
function servedRoute(ctx: AppContext): MailRoute {
  return { status: 'found', records: [{ exchange: ctx.config.hostname, priority: 0 }], message: null };
}

/** Each address of `emails` validated for the team, in order. One DNS look-up per domain, one suppression read in all. */
export async function validateEmails(ctx: AppContext, teamId: string, emails: readonly string[]): Promise<EmailValidation[]> {
  const state = stateOf(ctx);
  const syntax = emails.map((e) => checkSyntax(e.trim()));
  const valid = syntax.filter((s) => s.valid);
  const [routes, suppressed, served] = await Promise.all([
    mailRoutes(ctx, valid.map((s) => s.domain!)),
    valid.length > 0 ? state.suppressions.submit({ teamId, addresses: valid.map((s) => s.address!) }) : new Set<string>(),
    servedByTheBox(ctx, valid),
  ]);
  return emails.map((email, i) => {
    const s = syntax[i]!;
    let mx = s.valid ? routes.get(s.domain!)! : NOT_CHECKED;
    if (s.valid && served.has(s.address!) && mx.status !== 'found' && mx.status !== 'implicit') mx = servedRoute(ctx);
    const suggestion = s.valid ? suggestionFor(state, s.domain!) : null;
    const checks: Checks = {
      syntax: { valid: s.valid, message: s.message, smtputf8: s.smtputf8, idn: s.idn },
      mx,
      // A domain of its own whose mail goes to a disposable provider is as disposable.
      disposable: s.valid && (isDisposableDomain(s.domain!) || mx.records.some((r) => isDisposableDomain(r.exchange))),
      role: s.valid && isRoleAccount(s.local!),
      typo: suggestion !== null,
      suppressed: s.valid && suppressed.has(addressKey(s.address!)),
    };
    return {
      success: true as const,
      email,
      normalized_email: s.address,
      user: s.local,
      domain: s.domain,
      ...verdict(checks),
      did_you_mean: suggestion ? `${s.local}@${suggestion}` : null,
      checks,
    };
  });
}

export async function validateEmail(ctx: AppContext, teamId: string, email: string): Promise<EmailValidation> {
  const [one] = await validateEmails(ctx, teamId, [email]);
  return one!;
}
