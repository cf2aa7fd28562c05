// Which recipients the MX accepts, and where each one's copy goes. In order of precedence:
//   0. the unsubscribe addresses of the box's host name, `unsub-<token>@<MAIL_HOSTNAME>` (the mailto of an
//      email's List-Unsubscribe): a valid token's message unsubscribes its contact; any other is unknown;
//   1. our own return paths, `bounces+<em_id>@<domain of the box>`: bounce (DSN) and complaint (ARF) notices;
//   2. the rua address we publish, `dmarc-reports@<domain>`: DMARC aggregate reports;
//   3. mailboxes, aliases and the domain's catch-all (the mail store's resolveAddress);
//   4. the domain's inbound routing setting (`inbound_mode`, PATCH /domains/{id}):
//        none                  only mailboxes, aliases and catch-alls receive; any other address is unknown
//        webhook               every address of the domain becomes an inbound email (email.inbound);
//                              mailboxes are not used
//        mailbox_then_webhook  addresses served by a mailbox go to it; all others become inbound emails
//        mailbox_and_webhook   as above, and mail for mailboxes also becomes an inbound email
// A domain that is not one of the box's is not local: the MX is no relay.
import type { AppContext } from '../../context.js';
import { readsOf } from '../../db/index.js';
import type { MailboxAccount, MailStore } from '../../mailstore/types.js';
import { RETURN_PATH_PREFIX } from '../sending/index.js';
import { readUnsubscribeToken, tokenOfAddress } from '../audience/index.js';
import { emailIdFromReturnPath } from './feedback.js';
import { directoryOf } from './directory.js';
import { INBOUND_MODES, type InboundMode } from '../platform/index.js';


/** The local part the published DMARC record names (`rua=mailto:dmarc-reports@<domain>`). */
export const DMARC_RUA_LOCAL_PART = 'dmarc-reports';

export interface LocalDomain {
  id: string;
  teamId: string;
  name: string;
  inboundMode: InboundMode;
  verified: boolean;
}

/** RFC 5321 §4.5.1: every domain the box serves accepts mail for its postmaster. */
export const POSTMASTER = 'postmaster';

/**
 * The box's feedback-loop address, `fbl@<MAIL_HOSTNAME>`: the one an operator registers with the mailbox
 * providers' complaint feedback loops (Microsoft JMRP/SNDS, Yahoo CFL, Validity's Universal FBL), which send
 * their reports there rather than to the return path. An ARF or JMRP report arriving there is applied to the
 * email its enclosed copy names by Message-ID (ours embed the email's id and this host); everything sent
 * there is also kept as an inbound email of the operator's team, so the providers' confirmation mail can be
 * read (GET /inbound).
 */
export const FEEDBACK_LOOP_LOCAL_PART = 'fbl';

/**
 * Addresses of a domain that the box itself answers for (the DMARC `rua` address, the `bounces+…` return
 * paths): no mailbox or alias may take them. Answers why, or null.
 */
export function reservedAddress(address: string): string | null {
  const local = address.slice(0, address.lastIndexOf('@')).toLowerCase();
  if (local === DMARC_RUA_LOCAL_PART) return 'the box receives DMARC aggregate reports there';
  if (local.startsWith(RETURN_PATH_PREFIX)) return 'the box receives bounce notices there';
  return null;
}

/**
 * Where the box's own postmaster's mail is kept when no domain the box serves covers its host name: the
 * operator's team (the first one, made at bootstrap), under the host name with no domain record.
 */
export interface HostDomain {
  id: null;
  teamId: string;
  name: string;
}

export type RecipientRoute =
  | { kind: 'mailbox'; address: string; domain: LocalDomain; mailboxIds: number[]; accounts: MailboxAccount[]; via: 'mailbox' | 'alias' | 'catch-all'; alsoWebhook: boolean }
  | { kind: 'webhook'; address: string; domain: LocalDomain | HostDomain; feedbackLoop?: true }
  | { kind: 'feedback'; address: string; domain: LocalDomain; emailPublicId: string }
  | { kind: 'dmarc'; address: string; domain: LocalDomain }
  | { kind: 'unsubscribe'; address: string; token: string };

export type Refusal = { kind: 'unknown_user' } | { kind: 'not_local' } | { kind: 'mailbox_full' };

interface DomainRow {
  id: string;
  team_id: string;
  name: string;
  inbound_mode: string;
  status: string;
}

export async function findLocalDomain(ctx: AppContext, name: string): Promise<LocalDomain | null> {
  const row = await readsOf(ctx.db)<DomainRow>('domains').where({ name: name.toLowerCase() }).first('id', 'team_id', 'name', 'inbound_mode', 'status');
  if (!row) return null;
  const mode = (INBOUND_MODES as readonly string[]).includes(row.inbound_mode) ? (row.inbound_mode as InboundMode) : 'none';
  return { id: row.id, teamId: row.team_id, name: row.name, inboundMode: mode, verified: row.status === 'verified' };
}

/** Where mail for `address` goes, or why it is refused. `store` is null while no mail store is wired. */
export async function routeRecipient(ctx: AppContext, store: MailStore | null, address: string): Promise<RecipientRoute | Refusal> {
  // Each unsubscribe address is its own token: checked, never cached in the directory.
  const token = tokenOfAddress(ctx, address);
  if (token !== null) return (await readUnsubscribeToken(ctx, readsOf(ctx.db), token)).ok ? { kind: 'unsubscribe', address, token } : { kind: 'unknown_user' };
  // Everything but the mailboxes' usage comes from the directory (services/inbound/directory.ts).
  const route = await directoryOf(ctx).route(address, () => resolveRecipient(ctx, store, address));
  if (route.kind !== 'mailbox' || !store) return route;
  // A mailbox over its quota does not take the message (RFC 3463 4.2.2) and the sender retries later; for an
  // alias, one full member defers the message for all (as a member that the message would push over its quota
  // does at the end of DATA): delivering to the others and dropping the full one's copy lost it unsaid.
  // Fresh usage for the accounts that have a quota (the store checks again, atomically, when it delivers).
  if (!route.accounts.some((a) => a.quotaBytes > 0)) return route;
  const accounts = (await Promise.all(route.accounts.map((a) => (a.quotaBytes > 0 ? store.getAccount(a.id) : a)))).filter((a): a is MailboxAccount => a !== null);
  if (accounts.length === 0 || accounts.some((a) => a.quotaBytes > 0 && a.usedBytes >= a.quotaBytes)) return { kind: 'mailbox_full' };
  return { ...route, mailboxIds: accounts.map((a) => a.id), accounts };
}

/** The route as the tables say (the accounts with their usage as read, full or not). */
async function resolveRecipient(ctx: AppContext, store: MailStore | null, address: string): Promise<RecipientRoute | Refusal> {
  if (address.toLowerCase() === POSTMASTER) return resolvePostmaster(ctx, store);
  const at = address.lastIndexOf('@');
  if (at <= 0) return { kind: 'unknown_user' };
  const local = address.slice(0, at);
  const domain = await findLocalDomain(ctx, address.slice(at + 1));
  // The box's own postmaster, unless a team has verified the host name as its domain (an unverified claim
  // to it must not take the box's postmaster away).
  if (local.toLowerCase() === POSTMASTER && !domain?.verified && isHostname(ctx, address.slice(at + 1))) return hostPostmaster(ctx, address);
  if (local.toLowerCase() === FEEDBACK_LOOP_LOCAL_PART && !domain?.verified && isHostname(ctx, address.slice(at + 1))) {
    const route = await hostPostmaster(ctx, address);
    return route.kind === 'webhook' ? { ...route, feedbackLoop: true } : route;
  }
  if (!domain) return { kind: 'not_local' };
  const emailPublicId = emailIdFromReturnPath(address);
  if (emailPublicId) return { kind: 'feedback', address, domain, emailPublicId };
  // Only once the domain is verified: a team that added a name it does not control must not collect its
  // DMARC reports (the rua address is in the DMARC record the verified owner publishes).
  if (local.toLowerCase() === DMARC_RUA_LOCAL_PART && domain.verified) return { kind: 'dmarc', address, domain };
  if (domain.inboundMode === 'webhook') return { kind: 'webhook', address, domain };
  const resolved = store ? await store.resolveAddress(address) : { kind: 'none' as const };
  if (store && resolved.kind === 'mailboxes' && resolved.mailboxIds.length > 0) {
    const accounts = (await Promise.all(resolved.mailboxIds.map((id) => store.getAccount(id)))).filter((a): a is MailboxAccount => a !== null);
    if (accounts.length > 0) {
      return { kind: 'mailbox', address, domain, mailboxIds: accounts.map((a) => a.id), accounts, via: resolved.via, alsoWebhook: domain.inboundMode === 'mailbox_and_webhook' };
    }
    return { kind: 'mailbox_full' };
  }
  if (domain.inboundMode === 'mailbox_then_webhook' || domain.inboundMode === 'mailbox_and_webhook') return { kind: 'webhook', address, domain };
  // A postmaster without a mailbox or alias: kept as an inbound email of the domain (GET /inbound), never lost.
  if (local.toLowerCase() === POSTMASTER && domain.verified) return { kind: 'webhook', address, domain };
  return { kind: 'unknown_user' };
}

/**
 * The bare `postmaster` (RFC 5321 §4.5.1, no domain): the postmaster of the box's host name, or of the
 * nearest parent domain the box serves (mail.example.com → example.com), or else the box's own.
 */
async function resolvePostmaster(ctx: AppContext, store: MailStore | null): Promise<RecipientRoute | Refusal> {
  const labels = ctx.config.hostname.toLowerCase().split('.');
  for (let i = 0; i < labels.length - 1; i++) {
    const domain = labels.slice(i).join('.');
    if ((await findLocalDomain(ctx, domain))?.verified) return resolveRecipient(ctx, store, `${POSTMASTER}@${domain}`);
  }
  return hostPostmaster(ctx, `${POSTMASTER}@${labels.join('.')}`);
}

const isHostname = (ctx: AppContext, domain: string) => domain.toLowerCase() === ctx.config.hostname.toLowerCase();

/**
 * `postmaster@<MAIL_HOSTNAME>` (RFC 5321 §4.5.1 MUST), and `fbl@` there, when no team has verified a domain of
 * that name: kept for the operator's team.
 */
async function hostPostmaster(ctx: AppContext, address: string): Promise<RecipientRoute | Refusal> {
  const hostname = ctx.config.hostname.toLowerCase();
  // The first team made (SQLite's rowid: insertion order), the bootstrap's.
  const team = await readsOf(ctx.db)<{ id: string }>('teams').orderBy('rowid').first('id');
  return team ? { kind: 'webhook', address, domain: { id: null, teamId: team.id, name: hostname } } : { kind: 'unknown_user' };
}
