// Flags: canonical spelling and the compact stored form (flags joined by single spaces; '' for none).
// IMAP flags are atoms (RFC 3501 §9 flag-keyword), so they never contain a space; flags compare
// case-insensitively, so system flags are stored in their canonical case and keywords deduplicated
// without regard to case (the first spelling wins).
import { MailStoreError, SYSTEM_FLAGS } from './types.js';

const SYSTEM = new Map<string, string>(SYSTEM_FLAGS.map((f) => [f.toLowerCase(), f]));
// atom-char minus the specials; a system flag starts with one backslash.
const KEYWORD = /^[^\s(){%*"\\\]\x00-\x1f\x7f]+$/;

export function normalizeFlags(flags: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of flags) {
    const lower = raw.toLowerCase();
    const system = SYSTEM.get(lower);
    if (!system && (lower === '\\recent' || lower === '\\*')) continue; // session-only / PERMANENTFLAGS marker
    if (!system && !KEYWORD.test(raw)) throw new MailStoreError(`Invalid flag '${raw}'`, 'invalid');
    if (seen.has(lower)) continue;
    seen.add(lower);
    out.push(system ?? raw);
  }
  return out;
}

export const encodeFlags = (flags: readonly string[]): string => flags.join(' ');
export const decodeFlags = (stored: string | null): string[] => (stored ? stored.split(' ') : []);

/** The flags after applying `mode` with (already normalised) `change`. */
export function applyFlags(current: readonly string[], mode: 'add' | 'remove' | 'set', change: readonly string[]): string[] {
  if (mode === 'set') return [...change];
  const lowerChange = new Set(change.map((f) => f.toLowerCase()));
  if (mode === 'remove') return current.filter((f) => !lowerChange.has(f.toLowerCase()));
  const have = new Set(current.map((f) => f.toLowerCase()));
  return [...current, ...change.filter((f) => !have.has(f.toLowerCase()))];
}

export const sameFlags = (a: readonly string[], b: readonly string[]): boolean => {
  if (a.length !== b.length) return false;
  const set = new Set(a.map((f) => f.toLowerCase()));
  return b.every((f) => set.has(f.toLowerCase()));
};

export const hasFlag = (flags: readonly string[], flag: string): boolean => flags.some((f) => f.toLowerCase() === flag.toLowerCase());
