// API keys: creation, rotation, revocation and authentication of bearer credentials.
// Keys are 32 random base62 characters behind an `sk_live_`/`sk_test_` prefix; only their SHA-256 is stored.
import type { AppContext } from '../../context.js';
import type { Plan } from '../../config.js';
import { queryRows, readsOf, type Queryable } from '../../db/index.js';
import { forbidden, notFound } from '../../core/errors.js';
import { API_KEY_PATTERN, newId, randomBase62 } from '../../core/ids.js';
import { hashSecret } from '../../core/secrets.js';
import { MINUTE } from '../../core/clock.js';
import { forgetfulCachePer } from '../../core/forgetful-cache.js';
import { limitsFor } from './limits.js';
import { authenticateAccessToken } from './oauth.js';
import type { Scope } from './oauth-scopes.js';

export const PERMISSIONS = ['full_access', 'sending_access'] as const;
export type Permission = (typeof PERMISSIONS)[number];
export const KEY_MODES = ['live', 'test'] as const;
export type KeyMode = (typeof KEY_MODES)[number];

/** Who is calling: resolved from the bearer credential on every request. */
export interface Principal {
  teamId: string;
  plan: Plan;
  keyId: string;
  permission: Permission;
  mode: KeyMode;
  /**
   * Present only for an OAuth access token (`pat_…`): the scopes it was granted, which every route checks (an
   * API key has none: its permission decides). Then `keyId` is the OAuth grant's id, not an API key's.
   */
  scopes?: readonly Scope[];
}

/** The API key a principal is (null for an OAuth token): what an email records as the key that sent it. */
export const apiKeyIdOf = (p: Principal): string | null => (p.scopes ? null : p.keyId);

/** What the API shows of a key: never the secret. */
export interface ApiKeyView {
  id: string;
  name: string;
  permission: Permission;
  mode: KeyMode;
  /** e.g. `sk_live_…a1B2`, enough to tell keys apart. */
  token_hint: string;
  created_at: string;
  rotated_at: string | null;
  last_used_at: string | null;
}

interface ApiKeyRow {
  id: string;
  team_id: string;
  name: string;
  permission: Permission;
  mode: KeyMode;
  token_hash: string;
  token_hint: string;
  created_at: string;
  rotated_at: string | null;
  last_used_at: string | null;
}

export interface CreateApiKeyInput {
  name: string;
  permission: Permission;
  mode: KeyMode;
}

export interface IssuedKey {
  key: ApiKeyView;
  /** The plaintext value: shown once, never stored. */
  token: string;
}

/** last_used_at is refreshed at most this often, so authentication is not a write per request. */
const LAST_USED_GRANULARITY_MS = MINUTE;

export function newToken(mode: KeyMode): string {
  return `sk_${mode}_${randomBase62(32)}`;
}

export function modeOfToken(token: string): KeyMode | null {
  const m = API_KEY_PATTERN.exec(token);
  return m ? (m[1] as KeyMode) : null;
}

function view(row: ApiKeyRow): ApiKeyView {
  const { id, name, permission, mode, token_hint, created_at, rotated_at, last_used_at } = row;
  return { id, name, permission, mode, token_hint, created_at, rotated_at, last_used_at };
}

const hint = (token: string) => `${token.slice(0, 8)}…${token.slice(-4)}`;

/**
 * Inserts a key for a team, enforcing the plan's key cap. `token` lets the bootstrap use an operator-chosen value.
 * Runs inside the caller's transaction so the count and the insert cannot race.
 */
export async function insertApiKey(
  q: Queryable,
  at: Date,
  team: { id: string; plan: Plan },
  input: CreateApiKeyInput,
  token: string = newToken(input.mode),
): Promise<IssuedKey> {
  const cap = limitsFor(team.plan).apiKeys;
  const [{ n }] = (await q('api_keys').where('team_id', team.id).count({ n: '*' })) as [{ n: number }];
  if (Number(n) >= cap) throw forbidden(`API key limit reached: the ${team.plan} plan allows ${cap} keys`);
  const row: ApiKeyRow = {
    id: newId(),
    team_id: team.id,
    name: input.name,
    permission: input.permission,
    mode: input.mode,
    token_hash: hashSecret(token),
    token_hint: hint(token),
    created_at: at.toISOString(),
    rotated_at: null,
    last_used_at: null,
  };
  await q('api_keys').insert(row);
  return { key: view(row), token };
}

async function teamOf(q: Queryable, teamId: string): Promise<{ id: string; plan: Plan }> {
  const team = await q<{ id: string; plan: Plan }>('teams').select('id', 'plan').where({ id: teamId }).first();
  if (!team) throw notFound('Team not found');
  return team;
}

/**
 * A test-mode key never issues a live value (creating or rotating one): test keys are handed to CI and
 * staging, and one that leaked must not be turned into a key that sends for real.
 */
function mayIssue(callerMode: KeyMode | undefined, mode: KeyMode): void {
  if (callerMode === 'test' && mode !== 'test') throw forbidden('A test-mode API key can only create and rotate test-mode keys');
}

/** `callerMode`: the mode of the key asking (the API's caller); the admin CLI passes none. */
export async function createApiKey(ctx: AppContext, teamId: string, input: CreateApiKeyInput, callerMode?: KeyMode): Promise<IssuedKey> {
  mayIssue(callerMode, input.mode);
  return ctx.db.transaction(async (trx) => insertApiKey(trx, ctx.clock.now(), await teamOf(trx, teamId), input));
}

/** Oldest first. */
export async function listApiKeys(ctx: AppContext, teamId: string): Promise<ApiKeyView[]> {
  const rows = await ctx.db<ApiKeyRow>('api_keys').where('team_id', teamId).orderByRaw('created_at ASC, rowid ASC');
  return rows.map(view);
}

async function findKey(q: Queryable, teamId: string, id: string): Promise<ApiKeyRow> {
  const row = await q<ApiKeyRow>('api_keys').where({ team_id: teamId, id }).first();
  if (!row) throw notFound('API key not found');
  return row;
}

/** A new value for the same key; the old value stops working at once. */
export async function rotateApiKey(ctx: AppContext, teamId: string, id: string, callerMode?: KeyMode): Promise<IssuedKey> {
  return ctx.apiKeyChanges.after(
    ctx.db.transaction(async (trx) => {
      const row = await findKey(trx, teamId, id);
      mayIssue(callerMode, row.mode);
      const token = newToken(row.mode);
      const updated: ApiKeyRow = { ...row, token_hash: hashSecret(token), token_hint: hint(token), rotated_at: ctx.clock.now().toISOString() };
      await trx('api_keys').where({ id }).update({ token_hash: updated.token_hash, token_hint: updated.token_hint, rotated_at: updated.rotated_at });
      return { key: view(updated), token };
    }),
  );
}

/**
 * `callerMode`: the mode of the key asking. A test-mode key revokes only test-mode keys: like the rule for
 * issuing, a test key handed to CI or staging must not be able to take the team's live keys away.
 */
export async function deleteApiKey(ctx: AppContext, teamId: string, id: string, callerMode?: KeyMode): Promise<void> {
  const row = await findKey(ctx.db, teamId, id);
  if (callerMode === 'test' && row.mode !== 'test') throw forbidden('A test-mode API key can only revoke test-mode keys');
  await ctx.apiKeyChanges.after(ctx.db('api_keys').where({ team_id: teamId, id }).delete());
}

/**
 * How long a key found by `authenticate` is remembered: every API request asks, and a stream of them need not
 * read the same row each time. A rotation or deletion here, and a plan change in this process, forget every
 * key at once (ctx.apiKeyChanges); a token that is not found is never remembered, so a key created by the
 * admin CLI works at once. What the CLI changes of an existing key's team (`teams set-plan`: the API's rate
 * limits) is seen within this time.
 */
export const AUTH_CACHE_TTL_MS = 1_000;
const MAX_REMEMBERED_KEYS = 10_000;
type KeyRow = ApiKeyRow & { plan: Plan };
const rememberedKeysOf = forgetfulCachePer<AppContext, string, KeyRow | undefined>(AUTH_CACHE_TTL_MS, MAX_REMEMBERED_KEYS, (ctx) => ctx.apiKeyChanges);

/** Resolves a bearer credential (API key, or OAuth access token) to its principal, or null when it is not a live credential. */
export async function authenticate(ctx: AppContext, token: string): Promise<Principal | null> {
  // OAuth access tokens (issue 33) are credentials only while the authorization server is switched on.
  if (token.startsWith('pat_')) return ctx.config.oauthEnabled ? authenticateAccessToken(ctx, token) : null;
  if (!modeOfToken(token)) return null;
  const tokenHash = hashSecret(token);
  const row = await rememberedKeysOf(ctx).get(
    tokenHash,
    async () => {
      // Written out and run directly (db.queryRows): the read behind every API request that is not remembered.
      const [found] = await queryRows<KeyRow>(
        readsOf(ctx.db),
        'SELECT k.*, t.plan FROM api_keys AS k JOIN teams AS t ON t.id = k.team_id WHERE k.token_hash = ? LIMIT 1',
        [tokenHash],
      );
      return found;
    },
    (found) => found !== undefined,
  );
  if (!row) return null;
  const now = ctx.clock.now();
  if (!row.last_used_at || now.getTime() - Date.parse(row.last_used_at) >= LAST_USED_GRANULARITY_MS) {
    // On the remembered row too, so that the next requests within the granularity do not write again.
    row.last_used_at = now.toISOString();
    await ctx.db('api_keys').where({ id: row.id }).update({ last_used_at: row.last_used_at });
  }
  return { teamId: row.team_id, plan: row.plan, keyId: row.id, permission: row.permission, mode: row.mode };
}
