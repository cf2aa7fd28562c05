// The team's suppression list: addresses the box will not send to (hard bounces, complaints, manual).
import { placeholders, type Queryable } from '../../db/index.js';
import { queryJson } from '../../db/json-reads.js';
import { addressKey } from '../../core/address.js';

export type SuppressionReason = 'bounce' | 'complaint' | 'manual' | 'unsubscribe';

/** The subset of `addresses` on the team's list, as lower-cased keys. */
export async function suppressedAmong(q: Queryable, teamId: string, addresses: string[]): Promise<Set<string>> {
  if (addresses.length === 0) return new Set();
  const keys = [...new Set(addresses.map(addressKey))];
  const emails = await queryJson<string[]>(q, `SELECT json_group_array(email) FROM suppressions WHERE team_id = ? AND email IN (${placeholders(keys.length)})`, [teamId, ...keys]);
  return new Set(emails ?? []);
}

/** Adds an address (idempotent: an existing entry keeps its first reason). */
export async function addSuppression(q: Queryable, at: Date, teamId: string, address: string, reason: SuppressionReason, details?: string): Promise<void> {
  await q('suppressions')
    .insert({ team_id: teamId, email: addressKey(address), reason, details: details ?? null, created_at: at.toISOString() })
    .onConflict(['team_id', 'email'])
    .ignore();
}
