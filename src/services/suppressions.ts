// The team's suppression list: addresses the box will not send to (hard bounces, complaints, manual).
import { placeholders, queryRows, type Queryable } from '../db/index.js';
import { addressKey } from '../core/address.js';

export type SuppressionReason = 'bounce' | 'complaint' | 'manual' | 'unsubscribe';

/** The subset of `addresses` on the team's list, as lower-cased keys. */
export async function suppressedAmong(q: Queryable, teamId: string, addresses: string[]): Promise<Set<string>> {
  if (addresses.length === 0) return new Set();
  const keys = [...new Set(addresses.map(addressKey))];
  const rows = await queryRows<{ email: string }>(q, `SELECT email FROM suppressions WHERE team_id = ? AND email IN (${placeholders(keys.length)})`, [teamId, ...keys]);
  return new Set(rows.map((r) => r.email));
}

/** Adds an address (idempotent: an existing entry keeps its first reason). */
export async function addSuppression(q: Queryable, at: Date, teamId: string, address: string, reason: SuppressionReason, details?: string): Promise<void> {
  await q('suppressions')
    .insert({ team_id: teamId, email: addressKey(address), reason, details: details ?? null, created_at: at.toISOString() })
    .onConflict(['team_id', 'email'])
    .ignore();
}
