// The OAuth 2.0 authorization server (issue 33): clients (registered by the operator or dynamically, RFC 7591),
// the people who may approve a grant (operator-issued logins, scrypt-hashed passwords), authorization codes and
// tokens. Every secret (client secret, code, access and refresh token) is stored as its SHA-256 only.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // registered_by: operator | dynamic. secret_hash null: a public client (PKCE only, token_endpoint_auth_method none).
  await knex.raw(`CREATE TABLE oauth_clients (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,
    scope TEXT NOT NULL,
    secret_hash TEXT,
    registered_by TEXT NOT NULL,
    created_at TEXT NOT NULL
  )`);
  await knex.raw(`CREATE TABLE oauth_users (
    id TEXT PRIMARY KEY,
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at TEXT NOT NULL
  )`);
  await knex.raw('CREATE INDEX oauth_users_team ON oauth_users (team_id)');
  // A grant: what one person approved for one client; its tokens are one family (refresh reuse revokes it whole).
  await knex.raw(`CREATE TABLE oauth_grants (
    id TEXT PRIMARY KEY,
    client_id TEXT NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES oauth_users(id) ON DELETE CASCADE,
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
  )`);
  await knex.raw(`CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,
    redirect_uri_given INTEGER NOT NULL,
    code_challenge TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at TEXT
  )`);
  // kind: access | refresh. used_at: a refresh token spent by a rotation.
  await knex.raw(`CREATE TABLE oauth_tokens (
    token_hash TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    scope TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at TEXT,
    revoked_at TEXT,
    created_at TEXT NOT NULL
  )`);
  await knex.raw('CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id)');
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['oauth_tokens', 'oauth_codes', 'oauth_grants', 'oauth_users', 'oauth_clients']) await knex.raw(`DROP TABLE IF EXISTS ${t}`);
}
