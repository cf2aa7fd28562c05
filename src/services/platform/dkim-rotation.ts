// DKIM key rotation (spec: DKIM rotation events). Three steps and an abort:
//   1. rotate    POST /domains/{id}/dkim/rotate            new keys (state pending) under new selectors; the
//                                                          records to publish → domain.dkim_rotation_started
//   2. activate  POST /domains/{id}/dkim/rotate/activate   the new records looked up through the box's resolver
//                                                          (422 with what was found); the new keys sign, the old
//                                                          ones are retiring until retire_after, a job is queued
//                                                          → domain.dkim_rotation_activated
//   3. retire    the DKIM_RETIRE_JOB at retire_after        the old keys retired: private keys deleted, records
//                                                          marked to remove → domain.dkim_rotation_completed
//   abort        DELETE /domains/{id}/dkim/rotate          the pending keys deleted (409 once activated)
// One rotation at a time per domain: a second rotate answers 409 until the first has completed.
//
// No gap in signing: delivery reads a domain's active keys in one statement (services/sending/delivery.ts),
// and the activation switches them (old → retiring, new → active) in one transaction, so every message is
// signed by the old set or by the new one. Both sets' records are published at that moment (the new one was
// just looked up, the old one stays until retire_after), so a message signed on either side verifies.
import type { AppContext } from '../../context.js';
import { AppError, conflict, unprocessable } from '../../core/errors.js';
import { DAY } from '../../core/clock.js';
import type { Queryable } from '../../db/index.js';
import { recordEvent } from '../../events/recorder.js';
import { raiseAlert } from './alerts.js';
import type { Job } from '../../jobs/queue.js';
import { checkRecord, recordKey, type DnsRecord } from './domain-records.js';
import { keyTypeOf, loadKeys, newKeySet, type DkimKeyRow, type DkimKeyType } from './dkim-keys.js';
import { domainView, findRow, rotationOf, type Domain, type DomainRow } from './domains.js';

/** The job that retires a rotation's old keys at their retire_after. */
export const DKIM_RETIRE_JOB = 'domain.dkim_retire';

/** How long the old selector stays published after an activation (body `retire_after_days`). */
export const RETIRE_AFTER_DAYS = { default: 7, min: 1, max: 90 } as const;

interface RetireJobPayload {
  domainId: string;
  /** The keys the activation put in retiring: only those are retired. */
  keyIds: string[];
}

/**
 * A rotation as the endpoints answer it and as its events carry it. `records`: the new keys' TXT records (to
 * publish, with their status); `records_to_remove` (completed only): the old keys' records, to delete from
 * the DNS.
 */
export interface DkimRotation {
  domain_id: string;
  name: string;
  state: 'pending' | 'activated' | 'completed';
  /** The new keys' type: rsa, or ed25519 (an Ed25519 key and an RSA key, both signing). */
  key_type: DkimKeyType;
  selectors: { new: string[]; old: string[] };
  records: DnsRecord[];
  records_to_remove?: DnsRecord[];
  started_at: string;
  activated_at: string | null;
  retire_after: string | null;
  completed_at?: string;
}

export interface RotateInput {
  /** The new keys' type; the domain's current type when omitted. */
  dkim_key_type?: DkimKeyType | undefined;
}

export interface ActivateInput {
  retire_after_days: number;
}

const dkimRecords = (domain: Domain, selectors: string[]) => domain.dns_records.filter((r) => r.dkim && selectors.includes(r.dkim.selector));

function rotationView(domain: Domain): DkimRotation {
  const rotation = domain.dkim_rotation!;
  return { domain_id: domain.id, name: domain.name, ...rotation, records: dkimRecords(domain, rotation.selectors.new) };
}

const list = (selectors: string[]) => selectors.join(', ');

/** The 409 of a domain whose rotation is activated and waiting for its old keys' retirement. */
function stillCompleting(name: string, keys: DkimKeyRow[], action: string): AppError {
  const retiring = keys.filter((k) => k.state === 'retiring');
  return conflict(
    `The DKIM rotation of '${name}' is active: its new keys sign, and the old selector${retiring.length === 1 ? '' : 's'} ` +
      `${list(retiring.map((k) => k.selector))} will be retired at ${retiring[0]!.retire_after}, which completes it; ${action}`,
  );
}

async function keysOf(q: Queryable, domainId: string): Promise<DkimKeyRow[]> {
  return (await loadKeys(q, [domainId])).get(domainId) ?? [];
}

/** Step 1: new keys under new selectors, not signing until activated. Answers the records to publish. */
export async function rotateDkim(ctx: AppContext, teamId: string, id: string, input: RotateInput): Promise<DkimRotation> {
  const row = await findRow(ctx.db, teamId, id);
  const refuseBusy = (keys: DkimKeyRow[]) => {
    const pending = keys.filter((k) => k.state === 'pending');
    if (pending.length > 0) {
      throw conflict(
        `A DKIM rotation of '${row.name}' is already pending (selector${pending.length === 1 ? '' : 's'} ${list(pending.map((k) => k.selector))}): ` +
          'publish its records and activate it (POST /domains/{id}/dkim/rotate/activate), or abort it (DELETE /domains/{id}/dkim/rotate)',
      );
    }
    if (keys.some((k) => k.state === 'retiring')) throw stillCompleting(row.name, keys, 'rotate again after that');
  };
  const before = await keysOf(ctx.db, id);
  refuseBusy(before);
  const type = input.dkim_key_type ?? keyTypeOf(before.filter((k) => k.state === 'active'));
  const at = ctx.clock.now();
  // Key generation takes a while: before the transaction, so writers are not held up.
  const fresh = await newKeySet(ctx, at, id, type, 'pending', new Set(before.map((k) => k.selector)));
  return ctx.domainChanges.after(
    ctx.db.transaction(async (trx) => {
      const current = await findRow(trx, teamId, id);
      const keys = await keysOf(trx, id);
      refuseBusy(keys); // a rotation started meanwhile
      if (fresh.some((k) => keys.some((o) => o.selector === k.selector))) throw conflict(`A DKIM key of '${row.name}' was added meanwhile: try again`);
      await trx('dkim_keys').insert(fresh);
      await touch(trx, current, at);
      const rotation = rotationView(await domainView(ctx, trx, current));
      await recordEvent(trx, at, teamId, 'domain.dkim_rotation_started', { ...rotation });
      await raiseAlert(trx, at, teamId, 'dkim_rotation_pending', `A DKIM rotation of ${row.name} waits for activation: publish the new record(s), then POST /domains/${id}/dkim/rotate/activate.`, {
        domainId: id,
        domain: row.name,
        records: rotation.records,
      });
      return rotation;
    }),
  );
}

/**
 * Step 2: the new records must be published (looked up through the box's resolver: 422 saying what was found);
 * then the new keys sign and the old ones retire at now + `retire_after_days`.
 */
export async function activateDkimRotation(ctx: AppContext, teamId: string, id: string, input: ActivateInput): Promise<DkimRotation> {
  const row = await findRow(ctx.db, teamId, id);
  const keys = await keysOf(ctx.db, id);
  const pending = keys.filter((k) => k.state === 'pending');
  if (pending.length === 0) {
    if (keys.some((k) => k.state === 'retiring')) throw stillCompleting(row.name, keys, 'there is nothing to activate');
    throw conflict(`No DKIM rotation of '${row.name}' to activate: start one with POST /domains/{id}/dkim/rotate`);
  }
  const view = await domainView(ctx, ctx.db, row);
  const selectors = pending.map((k) => k.selector);
  const records = dkimRecords(view, selectors);
  // Outside any transaction: look-ups can take seconds.
  const results = await Promise.all(records.map((r) => checkRecord(ctx.dns, row.name, ctx.config.hostname, r)));
  const unanswered = results.filter((r) => r.transient);
  if (unanswered.length > 0) {
    throw new AppError(503, 'service_unavailable', `The new DKIM record could not be looked up (${unanswered.map((r) => r.unanswered).join('; ')}): nothing was changed, try again later`);
  }
  const failed = results.filter((r) => r.status !== 'verified');
  if (failed.length > 0) {
    throw unprocessable(`The new DKIM record${records.length === 1 ? ' is' : 's are'} not published as expected, so signing was not switched: ${failed.map((r) => r.reason).join('; ')}`);
  }
  const at = ctx.clock.now();
  const retireAfter = new Date(at.getTime() + input.retire_after_days * DAY);
  return ctx.domainChanges.after(
    ctx.db.transaction(async (trx) => {
      const current = await findRow(trx, teamId, id);
      const now = await keysOf(trx, id);
      const stillPending = now.filter((k) => k.state === 'pending').map((k) => k.selector);
      if (stillPending.join() !== selectors.join()) throw conflict(`The DKIM rotation of '${row.name}' changed while its records were looked up: try again`);
      const old = now.filter((k) => k.state === 'active');
      // One transaction: a delivery reads the old active keys or the new ones, never a mix or none.
      await trx('dkim_keys').whereIn('id', old.map((k) => k.id)).update({ state: 'retiring', retire_after: retireAfter.toISOString() });
      await trx('dkim_keys').whereIn('id', pending.map((k) => k.id)).update({ state: 'active', activated_at: at.toISOString() });
      const stored = JSON.parse(current.record_status) as Record<string, { status: string; reason?: string }>;
      for (const r of records) stored[recordKey(r)] = { status: 'verified' };
      const next: DomainRow = { ...current, record_status: JSON.stringify(stored), updated_at: at.toISOString() };
      await trx('domains').where({ id }).update({ record_status: next.record_status, updated_at: next.updated_at });
      const payload: RetireJobPayload = { domainId: id, keyIds: old.map((k) => k.id) };
      await ctx.jobs.enqueue(trx, DKIM_RETIRE_JOB, payload, { runAt: retireAfter });
      const rotation = rotationView(await domainView(ctx, trx, next));
      await recordEvent(trx, at, teamId, 'domain.dkim_rotation_activated', { ...rotation });
      return rotation;
    }),
  );
}

/** Abort: a pending rotation's keys are deleted (their records may be removed). An activated one cannot be. */
export async function abortDkimRotation(ctx: AppContext, teamId: string, id: string): Promise<void> {
  await ctx.domainChanges.after(
    ctx.db.transaction(async (trx) => {
      const row = await findRow(trx, teamId, id);
      const keys = await keysOf(trx, id);
      const pending = keys.filter((k) => k.state === 'pending');
      if (pending.length === 0) {
        if (keys.some((k) => k.state === 'retiring')) throw stillCompleting(row.name, keys, 'an activated rotation cannot be aborted');
        throw conflict(`No DKIM rotation of '${row.name}' to abort`);
      }
      const at = ctx.clock.now();
      const before = await domainView(ctx, trx, row);
      const removed = dkimRecords(before, pending.map((k) => k.selector));
      await trx('dkim_keys').whereIn('id', pending.map((k) => k.id)).delete();
      const stored = JSON.parse(row.record_status) as Record<string, unknown>;
      for (const r of removed) delete stored[recordKey(r)];
      const next: DomainRow = { ...row, record_status: JSON.stringify(stored), updated_at: at.toISOString() };
      await trx('domains').where({ id }).update({ record_status: next.record_status, updated_at: next.updated_at });
      // The spec names no event for an abort: the domain changed, so domain.updated says how.
      const domain = await domainView(ctx, trx, next);
      await recordEvent(trx, at, teamId, 'domain.updated', {
        ...domain,
        changes: { dkim_rotation: 'aborted', selectors: pending.map((k) => k.selector), records_to_remove: removed },
      });
    }),
  );
}

/**
 * Step 3, the DKIM_RETIRE_JOB handler: the activation's old keys are retired — their private keys deleted, their
 * records listed to remove — and the rotation completes. Idempotent: keys retired already (or gone with their
 * domain) are left alone.
 */
export async function retireDkimKeys(ctx: AppContext, job: Job): Promise<void> {
  const { domainId, keyIds } = job.payload as RetireJobPayload;
  await ctx.domainChanges.after(
    ctx.db.transaction(async (trx) => {
      const retiring = await trx<DkimKeyRow>('dkim_keys').where({ domain_id: domainId, state: 'retiring' }).whereIn('id', keyIds);
      if (retiring.length === 0) return;
      const row = await trx<DomainRow>('domains').where({ id: domainId }).first();
      if (!row) return;
      const at = ctx.clock.now();
      const before = rotationOf(await keysOf(trx, domainId));
      await trx('dkim_keys').whereIn('id', retiring.map((k) => k.id)).update({ state: 'retired', retired_at: at.toISOString(), private_key_sealed: '' });
      const domain = await domainView(ctx, trx, row);
      const active = domain.dns_records.filter((r) => r.dkim?.state === 'active').map((r) => r.dkim!.selector);
      const retired = retiring.map((k) => k.selector);
      const completed: DkimRotation = {
        domain_id: domainId,
        name: row.name,
        state: 'completed',
        key_type: domain.dkim_key_type,
        selectors: { new: active, old: retired },
        records: dkimRecords(domain, active),
        records_to_remove: dkimRecords(domain, retired),
        started_at: before?.started_at ?? retiring[0]!.created_at,
        activated_at: before?.activated_at ?? null,
        retire_after: retiring[0]!.retire_after,
        completed_at: at.toISOString(),
      };
      await recordEvent(trx, at, row.team_id, 'domain.dkim_rotation_completed', { ...completed });
      await raiseAlert(trx, at, row.team_id, 'dkim_rotation_completed', `The DKIM rotation of ${row.name} is complete: the old record(s) can be removed from the DNS.`, {
        domainId,
        domain: row.name,
        recordsToRemove: completed.records_to_remove,
      });
    }),
  );
}

async function touch(trx: Queryable, row: DomainRow, at: Date): Promise<void> {
  await trx('domains').where({ id: row.id }).update({ updated_at: at.toISOString() });
}
