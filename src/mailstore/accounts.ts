// Accounts (mailboxes), logins, address resolution, and what the Mailboxes API edits besides: shares,
// filters and aliases (with the domain catch-all `*@domain`).
import { normaliseAddress } from '../core/address.js';
import { burnPasswordCheck, hashPassword, VerifiedLogins } from './password.js';
import { newObjectId, nextUidValidity, mailboxState, nowIso, overQuota, toAccount, type Core, type MailboxRow } from './rows.js';
import {
  DEFAULT_FOLDERS,
  MailStoreError,
  type Alias,
  type CreateAccountInput,
  type FilterRule,
  type MailboxAccount,
  type Resolution,
  type Share,
  type ShareAccess,
} from './types.js';

/** Lower-cased, domain in ASCII; `*@domain` kept as the catch-all form. */
export function canonicalAddress(address: string): string {
  const a = address.trim();
  if (a.startsWith('*@')) {
    const domain = normaliseAddress(`x${a.slice(1)}`);
    return domain ? `*${domain.slice(1)}`.toLowerCase() : a.toLowerCase();
  }
  return (normaliseAddress(a) ?? a).toLowerCase();
}

const isConstraint = (err: unknown) => err instanceof Error && /SQLITE_CONSTRAINT/.test(err.message);

interface AliasRow {
  id: number;
  team_id: string;
  domain_id: string;
  address: string;
  created_at: string;
}

export function createAccountOps(core: Core) {
  const live = () => core.reads('mailboxes').whereNull('deleted_at');
  const logins = new VerifiedLogins(() => core.clock.now().getTime());
  /** A write to what addresses resolve to (accounts, aliases, filter rules): announced once it has settled. */
  const directoryWrite = <T>(write: Promise<T>): Promise<T> => core.directory.after(write);

  async function aliasesWithTargets(rows: AliasRow[]): Promise<Alias[]> {
    if (rows.length === 0) return [];
    // Deleted mailboxes drop out of their aliases.
    const targets = (await core.reads('mail_alias_targets as t')
      .join('mailboxes as m', 'm.id', 't.mailbox_id')
      .whereNull('m.deleted_at')
      .whereIn(
        't.alias_id',
        rows.map((r) => r.id),
      )
      .orderBy('t.mailbox_id')
      .select('t.alias_id', 't.mailbox_id')) as Array<{ alias_id: number; mailbox_id: number }>;
    return rows.map((r) => ({
      id: r.id,
      teamId: r.team_id,
      domainId: r.domain_id,
      address: r.address,
      mailboxIds: targets.filter((t) => t.alias_id === r.id).map((t) => t.mailbox_id),
      createdAt: r.created_at,
    }));
  }

  return {
    async createAccount(input: CreateAccountInput): Promise<MailboxAccount> {
      const address = canonicalAddress(input.address);
      if (!address.includes('@') || address.startsWith('*@')) throw new MailStoreError(`Invalid address '${input.address}'`, 'invalid');
      if (await live().where({ address }).first('id')) throw new MailStoreError(`Mailbox ${address} already exists`, 'exists');
      const passwordHash = await hashPassword(input.password);
      const now = nowIso(core);
      try {
        const row = await directoryWrite(core.db.transaction(async (trx) => {
          if (input.maxAccountsPerTeam !== undefined && Number.isFinite(input.maxAccountsPerTeam)) {
            const [{ n }] = (await trx('mailboxes').where({ team_id: input.teamId }).whereNull('deleted_at').count({ n: '*' })) as [{ n: number }];
            if (Number(n) >= input.maxAccountsPerTeam) throw new MailStoreError(`Mailbox limit reached: ${input.maxAccountsPerTeam} mailboxes`, 'forbidden');
          }
          const base: Omit<MailboxRow, 'id'> = {
            team_id: input.teamId,
            domain_id: input.domainId,
            address,
            password_hash: passwordHash,
            display_name: input.displayName ?? null,
            quota_bytes: input.quotaBytes ?? 0,
            used_bytes: 0,
            highest_modseq: 1,
            last_uid_validity: 0,
            created_at: now,
            updated_at: now,
            deleted_at: null,
          };
          const [id] = (await trx('mailboxes').insert(base)) as number[];
          const m = mailboxState({ ...base, id: id! });
          await trx('mail_folders').insert(
            DEFAULT_FOLDERS.map((f) => ({
              mailbox_id: id,
              path: f.path,
              special_use: f.specialUse,
              subscribed: true,
              uid_validity: nextUidValidity(core, m),
              uid_next: 1,
              highest_modseq: 1,
              object_id: newObjectId('F'),
              created_at: now,
            })),
          );
          // The special-use folders made with the account are subscribed (RFC 3501 leaves the rest to SUBSCRIBE).
          await trx('mail_subscriptions').insert(DEFAULT_FOLDERS.map((f) => ({ mailbox_id: id, path: f.path, created_at: now })));
          await trx('mailboxes').where({ id }).update({ last_uid_validity: m.lastUidValidity });
          return { ...base, id: id! };
        }));
        return toAccount(row);
      } catch (err) {
        if (isConstraint(err)) throw new MailStoreError(`Mailbox ${address} already exists`, 'exists');
        throw err;
      }
    },

    async getAccount(id: number): Promise<MailboxAccount | null> {
      const row = (await live().where({ id }).first()) as MailboxRow | undefined;
      return row ? toAccount(row) : null;
    },

    async fitsQuota(mailboxId: number, bytes: number): Promise<boolean> {
      const row = (await live().where({ id: mailboxId }).first('quota_bytes', 'used_bytes')) as Pick<MailboxRow, 'quota_bytes' | 'used_bytes'> | undefined;
      return !row || !overQuota({ quota: row.quota_bytes, used: row.used_bytes }, bytes);
    },

    async findAccountByAddress(address: string): Promise<MailboxAccount | null> {
      const row = (await live().where({ address: canonicalAddress(address) }).first()) as MailboxRow | undefined;
      return row ? toAccount(row) : null;
    },

    async authenticate(address: string, password: string): Promise<MailboxAccount | null> {
      const row = (await live().where({ address: canonicalAddress(address) }).first()) as MailboxRow | undefined;
      if (!row) {
        await burnPasswordCheck(password);
        return null;
      }
      return (await logins.verify(password, row.password_hash)) ? toAccount(row) : null;
    },

    async setPassword(id: number, password: string): Promise<void> {
      const hash = await hashPassword(password);
      const n = await directoryWrite(core.db('mailboxes').where({ id }).whereNull('deleted_at').update({ password_hash: hash, updated_at: nowIso(core) }));
      if (n === 0) throw new MailStoreError(`Mailbox ${id} not found`, 'not_found');
    },

    async deleteAccount(id: number): Promise<void> {
      const now = nowIso(core);
      const n = await directoryWrite(core.db('mailboxes').where({ id }).whereNull('deleted_at').update({ deleted_at: now, updated_at: now }));
      if (n === 0) throw new MailStoreError(`Mailbox ${id} not found`, 'not_found');
    },

    /**
     * Removes up to `limit` accounts soft-deleted before `deletedBefore`, with everything they hold (the
     * cascade takes folders, messages, changes, shares, filters and alias targets; the triggers release the
     * sources). One transaction per account. Answers how many went.
     */
    async purgeDeletedAccounts(deletedBefore: Date, limit = 10): Promise<number> {
      const ids = ((await core.db('mailboxes').where('deleted_at', '<', deletedBefore.toISOString()).orderBy('id').limit(limit).select('id')) as Array<{ id: number }>).map(
        (r) => r.id,
      );
      for (const id of ids) await directoryWrite(core.db.transaction((trx) => trx('mailboxes').where({ id }).whereNotNull('deleted_at').delete()));
      return ids.length;
    },

    async hasDeletedAccounts(deletedBefore: Date): Promise<boolean> {
      return (await core.db('mailboxes').where('deleted_at', '<', deletedBefore.toISOString()).first('id')) !== undefined;
    },

    async updateAccount(id: number, patch: { displayName?: string | null; quotaBytes?: number }): Promise<MailboxAccount> {
      const update: Partial<MailboxRow> = { updated_at: nowIso(core) };
      if (patch.displayName !== undefined) update.display_name = patch.displayName;
      if (patch.quotaBytes !== undefined) update.quota_bytes = patch.quotaBytes;
      const n = await directoryWrite(core.db('mailboxes').where({ id }).whereNull('deleted_at').update(update));
      if (n === 0) throw new MailStoreError(`Mailbox ${id} not found`, 'not_found');
      return toAccount((await core.db('mailboxes').where({ id }).first()) as MailboxRow);
    },

    async listAccounts(query: { teamId: string; domainId?: string; offset: number; limit: number }) {
      const base = () => {
        const q = live().where({ team_id: query.teamId });
        if (query.domainId !== undefined) q.andWhere({ domain_id: query.domainId });
        return q;
      };
      const [{ total }] = (await base().count({ total: '*' })) as [{ total: number }];
      const rows = (await base().orderBy('id', 'desc').offset(query.offset).limit(query.limit)) as MailboxRow[];
      return { accounts: rows.map(toAccount), total: Number(total) };
    },

    async countAccounts(teamId: string): Promise<number> {
      const [{ total }] = (await live().where({ team_id: teamId }).count({ total: '*' })) as [{ total: number }];
      return Number(total);
    },

    /** One round trip: the live mailbox, else the alias's live targets, else the domain's catch-all. */
    async resolveAddress(address: string): Promise<Resolution> {
      const a = canonicalAddress(address);
      const at = a.lastIndexOf('@');
      if (at <= 0) return { kind: 'none' };
      const catchAll = `*${a.slice(at)}`;
      const rows = (await core.reads.raw(
        `SELECT 0 AS rank, id AS mailbox_id FROM mailboxes WHERE address = ? AND deleted_at IS NULL
         UNION ALL
         SELECT CASE WHEN a.address = ? THEN 1 ELSE 2 END AS rank, t.mailbox_id FROM mail_aliases a
           JOIN mail_alias_targets t ON t.alias_id = a.id
           JOIN mailboxes m ON m.id = t.mailbox_id AND m.deleted_at IS NULL
           WHERE a.address IN (?, ?)
         ORDER BY rank, mailbox_id`,
        [a, a, a, catchAll],
      )) as Array<{ rank: number; mailbox_id: number }>;
      if (rows.length === 0) return { kind: 'none' };
      const rank = rows[0]!.rank;
      const via = rank === 0 ? 'mailbox' : rank === 1 ? 'alias' : 'catch-all';
      return { kind: 'mailboxes', mailboxIds: rows.filter((r) => r.rank === rank).map((r) => r.mailbox_id), via };
    },

    // ---- shares ----

    async sharedWith(mailboxId: number): Promise<Array<{ owner: MailboxAccount; access: ShareAccess }>> {
      const rows = (await core.reads('mailbox_shares as s')
        .join('mailboxes as m', 'm.id', 's.owner_id')
        .where('s.target_id', mailboxId)
        .whereNull('m.deleted_at')
        .orderBy('m.address')
        .select('m.*', 's.access as share_access')) as Array<MailboxRow & { share_access: ShareAccess }>;
      return rows.map((r) => ({ owner: toAccount(r), access: r.share_access }));
    },

    async listShares(ownerId: number): Promise<Share[]> {
      const rows = (await core.reads('mailbox_shares as s')
        .join('mailboxes as m', 'm.id', 's.target_id')
        .where('s.owner_id', ownerId)
        .whereNull('m.deleted_at')
        .orderBy('s.created_at')
        .orderBy('s.target_id')
        .select('s.owner_id', 's.target_id', 's.access', 's.created_at', 'm.address')) as Array<{
        owner_id: number;
        target_id: number;
        access: ShareAccess;
        created_at: string;
        address: string;
      }>;
      return rows.map((r) => ({ ownerId: r.owner_id, targetId: r.target_id, targetAddress: r.address, access: r.access, createdAt: r.created_at }));
    },

    async setShare(ownerId: number, targetId: number, access: ShareAccess): Promise<Share> {
      if (ownerId === targetId) throw new MailStoreError('A mailbox cannot be shared with itself', 'invalid');
      const now = nowIso(core);
      return core.db.transaction(async (trx) => {
        const both = (await trx('mailboxes').whereIn('id', [ownerId, targetId]).whereNull('deleted_at')) as MailboxRow[];
        const target = both.find((m) => m.id === targetId);
        if (!both.some((m) => m.id === ownerId) || !target) throw new MailStoreError('Mailbox not found', 'not_found');
        await trx('mailbox_shares')
          .insert({ owner_id: ownerId, target_id: targetId, access, created_at: now })
          .onConflict(['owner_id', 'target_id'])
          .merge({ access });
        const row = (await trx('mailbox_shares').where({ owner_id: ownerId, target_id: targetId }).first()) as { created_at: string };
        return { ownerId, targetId, targetAddress: target.address, access, createdAt: row.created_at };
      });
    },

    async removeShare(ownerId: number, targetId: number): Promise<boolean> {
      return (await core.db('mailbox_shares').where({ owner_id: ownerId, target_id: targetId }).delete()) > 0;
    },

    // ---- filters ----

    async getFilters(mailboxId: number): Promise<FilterRule[]> {
      const rows = (await core.reads('mailbox_filters').where({ mailbox_id: mailboxId }).orderBy('position')) as Array<{ rule: string }>;
      return rows.map((r) => JSON.parse(r.rule) as FilterRule);
    },

    async setFilters(mailboxId: number, rules: FilterRule[]): Promise<void> {
      await directoryWrite(
        core.db.transaction(async (trx) => {
          await trx('mailbox_filters').where({ mailbox_id: mailboxId }).delete();
          if (rules.length > 0) {
            await trx('mailbox_filters').insert(rules.map((rule, position) => ({ mailbox_id: mailboxId, position, rule: JSON.stringify(rule) })));
          }
        }),
      );
    },

    // ---- aliases ----

    async createAlias(input: { teamId: string; domainId: string; address: string; mailboxIds: number[] }): Promise<Alias> {
      const address = canonicalAddress(input.address);
      const ids = [...new Set(input.mailboxIds)];
      if (ids.length === 0) throw new MailStoreError('An alias needs at least one mailbox', 'invalid');
      const now = nowIso(core);
      try {
        const id = await directoryWrite(core.db.transaction(async (trx) => {
          if (await trx('mailboxes').where({ address }).whereNull('deleted_at').first('id')) {
            throw new MailStoreError(`${address} is a mailbox`, 'exists');
          }
          if (await trx('mail_aliases').where({ address }).first('id')) throw new MailStoreError(`Alias ${address} already exists`, 'exists');
          const found = (await trx('mailboxes').whereIn('id', ids).whereNull('deleted_at').select('id')) as Array<{ id: number }>;
          if (found.length !== ids.length) throw new MailStoreError('Mailbox not found', 'not_found');
          const [aliasId] = (await trx('mail_aliases').insert({ team_id: input.teamId, domain_id: input.domainId, address, created_at: now })) as number[];
          await trx('mail_alias_targets').insert(ids.map((mailbox_id) => ({ alias_id: aliasId, mailbox_id })));
          return aliasId!;
        }));
        return { id, teamId: input.teamId, domainId: input.domainId, address, mailboxIds: ids.sort((a, b) => a - b), createdAt: now };
      } catch (err) {
        if (isConstraint(err)) throw new MailStoreError(`Alias ${address} already exists`, 'exists');
        throw err;
      }
    },

    async listAliases(query: { teamId: string; offset: number; limit: number }): Promise<{ aliases: Alias[]; total: number }> {
      const [{ total }] = (await core.reads('mail_aliases').where({ team_id: query.teamId }).count({ total: '*' })) as [{ total: number }];
      const rows = (await core.reads('mail_aliases').where({ team_id: query.teamId }).orderBy('id', 'desc').offset(query.offset).limit(query.limit)) as AliasRow[];
      return { aliases: await aliasesWithTargets(rows), total: Number(total) };
    },

    async getAlias(id: number): Promise<Alias | null> {
      const row = (await core.reads('mail_aliases').where({ id }).first()) as AliasRow | undefined;
      return row ? (await aliasesWithTargets([row]))[0]! : null;
    },

    async deleteAlias(id: number): Promise<void> {
      const n = await directoryWrite(core.db('mail_aliases').where({ id }).delete());
      if (n === 0) throw new MailStoreError(`Alias ${id} not found`, 'not_found');
    },
  };
}
