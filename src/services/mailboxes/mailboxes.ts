// Mailboxes API (spec: Mailboxes): the rules around the mail store's accounts, shares, filters and aliases.
// Plan gate (Pro and above) and per-plan counts (src/limits/table.ts MAILBOX_CAPS); an address must be on a
// verified domain of the team. The store (ctx.mailstore) does the storage; this file translates its errors.
import type { AppContext } from '../../context.js';
import type { Plan } from '../../config.js';
import { normaliseAddress, domainOf } from '../../core/address.js';
import { AppError, badRequest, conflict, forbidden, notFound, unprocessable } from '../../core/errors.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';
import { MAILBOX_CAPS } from '../../limits/table.js';
import { MailStoreError, type Alias, type FilterRule, type MailboxAccount, type Share, type ShareAccess } from '../../mailstore/types.js';
import { reservedAddress } from '../inbound/index.js';

/** Who calls: the team and its plan (from the API key). */
export interface MailboxCaller {
  teamId: string;
  plan: Plan;
}

export interface MailboxView {
  id: number;
  address: string;
  domainId: string;
  displayName: string | null;
  quotaBytes: number;
  usedBytes: number;
  createdAt: string;
  updatedAt: string;
}

export interface ShareView {
  mailboxId: number;
  targetMailboxId: number;
  targetAddress: string;
  access: ShareAccess;
  createdAt: string;
}

export interface AliasView {
  id: number;
  address: string;
  domainId: string;
  mailboxIds: number[];
  createdAt: string;
}

export const MAILBOX_PLAN_MESSAGE = 'Mailboxes require the Pro plan or above';

const view = (a: MailboxAccount): MailboxView => ({
  id: a.id,
  address: a.address,
  domainId: a.domainId,
  displayName: a.displayName,
  quotaBytes: a.quotaBytes,
  usedBytes: a.usedBytes,
  createdAt: a.createdAt,
  updatedAt: a.updatedAt,
});
const shareView = (s: Share): ShareView => ({ mailboxId: s.ownerId, targetMailboxId: s.targetId, targetAddress: s.targetAddress, access: s.access, createdAt: s.createdAt });
const aliasView = (a: Alias): AliasView => ({ id: a.id, address: a.address, domainId: a.domainId, mailboxIds: a.mailboxIds, createdAt: a.createdAt });

/** The store's errors in the API's terms. */
async function store<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof MailStoreError)) throw err;
    switch (err.code) {
      case 'not_found':
        throw notFound(err.message);
      case 'exists':
        throw conflict(err.message);
      case 'forbidden':
        throw forbidden(err.message);
      case 'quota_exceeded':
        throw unprocessable(err.message);
      case 'invalid':
        throw badRequest(err.message);
    }
  }
}

function gate(caller: MailboxCaller): number {
  const cap = MAILBOX_CAPS[caller.plan] ?? 0;
  if (cap <= 0) throw forbidden(MAILBOX_PLAN_MESSAGE);
  return cap;
}

/** Mailbox and alias local parts are logins: a dot-atom (RFC 5322 §3.2.3), no quoted strings. */
const LOGIN_LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const loginAddress = (address: string) => LOGIN_LOCAL.test(address.slice(0, address.lastIndexOf('@')));

/** A path id: a positive integer, else the resource cannot exist. */
function pathId(raw: string, what = 'Mailbox'): number {
  if (!/^\d{1,15}$/.test(raw)) throw notFound(`${what} not found`);
  return Number(raw);
}

async function ownMailbox(ctx: AppContext, teamId: string, id: number): Promise<MailboxAccount> {
  const account = await ctx.mailstore.getAccount(id);
  if (!account || account.teamId !== teamId) throw notFound('Mailbox not found');
  return account;
}

/** The team's verified domain of `address` (the send path's 422 messages when it is not). */
async function verifiedDomain(ctx: AppContext, teamId: string, domain: string): Promise<string> {
  const row = (await ctx.db('domains').where({ team_id: teamId, name: domain }).first('id', 'status')) as { id: string; status: string } | undefined;
  if (!row) throw unprocessable(`Domain '${domain}' not found for this team`);
  if (row.status !== 'verified') throw unprocessable(`Domain '${domain}' is not verified`);
  return row.id;
}

/** The addresses the box answers for itself cannot be a mailbox or an alias (their mail would never arrive). */
function refuseReserved(address: string): void {
  const why = reservedAddress(address);
  if (why) throw unprocessable(`'${address}' is reserved: ${why}`);
}

// ---- mailboxes ----

export async function createMailbox(
  ctx: AppContext,
  caller: MailboxCaller,
  input: { address: string; password: string; displayName?: string | null | undefined; quotaBytes?: number | undefined },
): Promise<MailboxView> {
  const cap = gate(caller);
  const address = normaliseAddress(input.address);
  if (!address || !loginAddress(address)) throw badRequest('address: must be a valid email address');
  refuseReserved(address);
  const domainId = await verifiedDomain(ctx, caller.teamId, domainOf(address));
  const account = await store(() =>
    ctx.mailstore.createAccount({
      teamId: caller.teamId,
      domainId,
      address,
      password: input.password,
      displayName: input.displayName ?? null,
      quotaBytes: input.quotaBytes ?? 0,
      maxAccountsPerTeam: cap,
    }),
  ).catch((err: unknown) => {
    if (err instanceof AppError && err.status === 403) throw forbidden(`Mailbox limit reached: the ${caller.plan} plan allows ${cap} mailboxes`);
    throw err;
  });
  return view(account);
}

export async function listMailboxes(ctx: AppContext, caller: MailboxCaller, domainId: string | undefined, page: PageRequest): Promise<Page<MailboxView>> {
  gate(caller);
  const { accounts, total } = await ctx.mailstore.listAccounts({
    teamId: caller.teamId,
    ...(domainId !== undefined ? { domainId } : {}),
    offset: page.offset,
    limit: page.perPage,
  });
  return toPage(accounts.map(view), total, page);
}

export async function getMailbox(ctx: AppContext, caller: MailboxCaller, id: string): Promise<MailboxView> {
  gate(caller);
  return view(await ownMailbox(ctx, caller.teamId, pathId(id)));
}

export async function updateMailbox(
  ctx: AppContext,
  caller: MailboxCaller,
  id: string,
  patch: { displayName?: string | null | undefined; quotaBytes?: number | undefined },
): Promise<MailboxView> {
  gate(caller);
  const account = await ownMailbox(ctx, caller.teamId, pathId(id));
  const change: { displayName?: string | null; quotaBytes?: number } = {};
  if (patch.displayName !== undefined) change.displayName = patch.displayName;
  if (patch.quotaBytes !== undefined) change.quotaBytes = patch.quotaBytes;
  return view(await store(() => ctx.mailstore.updateAccount(account.id, change)));
}

export async function deleteMailbox(ctx: AppContext, caller: MailboxCaller, id: string): Promise<void> {
  gate(caller);
  const account = await ownMailbox(ctx, caller.teamId, pathId(id));
  await store(() => ctx.mailstore.deleteAccount(account.id));
}

export async function setMailboxPassword(ctx: AppContext, caller: MailboxCaller, id: string, password: string): Promise<void> {
  gate(caller);
  const account = await ownMailbox(ctx, caller.teamId, pathId(id));
  await store(() => ctx.mailstore.setPassword(account.id, password));
}

// ---- shares ----

export async function listShares(ctx: AppContext, caller: MailboxCaller, id: string): Promise<ShareView[]> {
  gate(caller);
  const account = await ownMailbox(ctx, caller.teamId, pathId(id));
  return (await ctx.mailstore.listShares(account.id)).map(shareView);
}

export async function addShare(ctx: AppContext, caller: MailboxCaller, id: string, input: { targetMailboxId: number; access: ShareAccess }): Promise<ShareView> {
  gate(caller);
  const owner = await ownMailbox(ctx, caller.teamId, pathId(id));
  const target = await ctx.mailstore.getAccount(input.targetMailboxId);
  if (!target || target.teamId !== caller.teamId) throw unprocessable(`targetMailboxId: mailbox ${input.targetMailboxId} not found for this team`);
  if (target.id === owner.id) throw unprocessable('targetMailboxId: a mailbox cannot be shared with itself');
  return shareView(await store(() => ctx.mailstore.setShare(owner.id, target.id, input.access)));
}

export async function removeShare(ctx: AppContext, caller: MailboxCaller, id: string, targetId: string): Promise<void> {
  gate(caller);
  const owner = await ownMailbox(ctx, caller.teamId, pathId(id));
  if (!(await ctx.mailstore.removeShare(owner.id, pathId(targetId, 'Share')))) throw notFound('Share not found');
}

// ---- filters ----

export async function getFilters(ctx: AppContext, caller: MailboxCaller, id: string): Promise<FilterRule[]> {
  gate(caller);
  const account = await ownMailbox(ctx, caller.teamId, pathId(id));
  return ctx.mailstore.getFilters(account.id);
}

export async function putFilters(ctx: AppContext, caller: MailboxCaller, id: string, rules: FilterRule[]): Promise<FilterRule[]> {
  gate(caller);
  const account = await ownMailbox(ctx, caller.teamId, pathId(id));
  await store(() => ctx.mailstore.setFilters(account.id, rules));
  return ctx.mailstore.getFilters(account.id);
}

// ---- aliases ----

export async function listAliases(ctx: AppContext, caller: MailboxCaller, page: PageRequest): Promise<Page<AliasView>> {
  gate(caller);
  const { aliases, total } = await ctx.mailstore.listAliases({ teamId: caller.teamId, offset: page.offset, limit: page.perPage });
  return toPage(aliases.map(aliasView), total, page);
}

export async function createAlias(ctx: AppContext, caller: MailboxCaller, input: { address: string; mailboxIds: number[] }): Promise<AliasView> {
  gate(caller);
  const raw = input.address.trim();
  const catchAll = raw.startsWith('*@');
  const normal = normaliseAddress(catchAll ? `catchall${raw.slice(1)}` : raw);
  if (!normal || !loginAddress(normal)) throw badRequest('address: must be an email address or *@domain');
  const address = catchAll ? `*@${domainOf(normal)}` : normal;
  if (!catchAll) refuseReserved(address);
  const domainId = await verifiedDomain(ctx, caller.teamId, domainOf(normal));
  for (const mailboxId of new Set(input.mailboxIds)) {
    const target = await ctx.mailstore.getAccount(mailboxId);
    if (!target || target.teamId !== caller.teamId) throw unprocessable(`mailboxIds: mailbox ${mailboxId} not found for this team`);
  }
  return aliasView(await store(() => ctx.mailstore.createAlias({ teamId: caller.teamId, domainId, address, mailboxIds: input.mailboxIds })));
}

export async function deleteAlias(ctx: AppContext, caller: MailboxCaller, id: string): Promise<void> {
  gate(caller);
  const alias = await ctx.mailstore.getAlias(pathId(id, 'Alias'));
  if (!alias || alias.teamId !== caller.teamId) throw notFound('Alias not found');
  await store(() => ctx.mailstore.deleteAlias(alias.id));
}
