// A sending domain's DKIM keys: their generation, types and selectors, and reading them.
//
// A domain's key type is `rsa` (the default: one RSA-2048 key) or `ed25519` (an Ed25519 key, RFC 8463, and an
// RSA-2048 key beside it: both sign every message, since a receiver that does not know Ed25519 ignores that
// signature and needs the RSA one). The keys of one type form a set, made together and switched together:
// at creation, and by a rotation (dkim-rotation.ts), which is also how an existing domain changes its type.
import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/index.js';
import { newId, randomBase62 } from '../../core/ids.js';

const generateKeyPairAsync = promisify(generateKeyPair);

export const DKIM_KEY_TYPES = ['rsa', 'ed25519'] as const;
export type DkimKeyType = (typeof DKIM_KEY_TYPES)[number];
export type DkimAlgorithm = 'rsa' | 'ed25519';
/** pending (a rotation's, not signing yet), active (signs), retiring (replaced, still published), retired (to remove). */
export type DkimKeyState = 'pending' | 'active' | 'retiring' | 'retired';

export interface DkimKeyRow {
  id: string;
  domain_id: string;
  selector: string;
  /** What is published in p=: base64 SubjectPublicKeyInfo (RSA), the raw 32-byte key (Ed25519, RFC 8463 §4). */
  public_key: string;
  /** PKCS#8 PEM sealed with the box's master key; empty once the key is retired (deleted). */
  private_key_sealed: string;
  state: DkimKeyState;
  algorithm: DkimAlgorithm;
  created_at: string;
  activated_at: string | null;
  retire_after: string | null;
  retired_at: string | null;
}

/**
 * Selectors of a new key set: date-stamped so a rotation's differ from the old ones, RSA `s<date><4>` (as
 * domains have always had) and Ed25519 `e<date><4>` with the same random part, so the pair reads as one.
 * None of `taken` (the domain's selectors, retired ones included).
 */
function newSelectors(at: Date, taken: ReadonlySet<string>): { rsa: string; ed25519: string } {
  const date = at.toISOString().slice(0, 10).replace(/-/g, '');
  for (;;) {
    const tail = randomBase62(4).toLowerCase();
    const pair = { rsa: `s${date}${tail}`, ed25519: `e${date}${tail}` };
    if (!taken.has(pair.rsa) && !taken.has(pair.ed25519)) return pair;
  }
}

async function newKey(ctx: AppContext, at: Date, domainId: string, algorithm: DkimAlgorithm, selector: string, state: DkimKeyState): Promise<DkimKeyRow> {
  const { publicKey, privateKey } =
    algorithm === 'rsa'
      ? await generateKeyPairAsync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'der' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } })
      : await generateKeyPairAsync('ed25519', { publicKeyEncoding: { type: 'spki', format: 'der' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  // An Ed25519 SubjectPublicKeyInfo is a 12-byte header and the 32-byte key, which is what p= carries.
  const published = algorithm === 'rsa' ? publicKey : publicKey.subarray(publicKey.length - 32);
  return {
    id: newId(),
    domain_id: domainId,
    selector,
    public_key: published.toString('base64'),
    private_key_sealed: ctx.secrets.seal(privateKey),
    state,
    algorithm,
    created_at: at.toISOString(),
    activated_at: state === 'active' ? at.toISOString() : null,
    retire_after: null,
    retired_at: null,
  };
}

/**
 * The keys of a new set of `type`, in `state`: RSA, and for `ed25519` an Ed25519 key too. Generated outside any
 * transaction (an RSA key takes a while), so writers are not held up.
 */
export async function newKeySet(ctx: AppContext, at: Date, domainId: string, type: DkimKeyType, state: DkimKeyState, taken: ReadonlySet<string> = new Set()): Promise<DkimKeyRow[]> {
  const selectors = newSelectors(at, taken);
  const rsa = newKey(ctx, at, domainId, 'rsa', selectors.rsa, state);
  return type === 'rsa' ? [await rsa] : Promise.all([newKey(ctx, at, domainId, 'ed25519', selectors.ed25519, state), rsa]);
}

/** The type of a key set: `ed25519` when it has an Ed25519 key. */
export const keyTypeOf = (keys: ReadonlyArray<Pick<DkimKeyRow, 'algorithm'>>): DkimKeyType => (keys.some((k) => k.algorithm === 'ed25519') ? 'ed25519' : 'rsa');

/** Each domain's keys, oldest first, then in the order written (a set's Ed25519 key before its RSA key). */
export async function loadKeys(q: Queryable, domainIds: string[]): Promise<Map<string, DkimKeyRow[]>> {
  const rows = domainIds.length ? await q<DkimKeyRow>('dkim_keys').whereIn('domain_id', domainIds).orderByRaw('created_at, rowid') : [];
  const byDomain = new Map<string, DkimKeyRow[]>();
  for (const r of rows) byDomain.set(r.domain_id, [...(byDomain.get(r.domain_id) ?? []), r]);
  return byDomain;
}
