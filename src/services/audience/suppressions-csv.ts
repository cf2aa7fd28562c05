// The suppression list in and out as CSV (spec: GET /suppressions/export, POST /suppressions/import). The
// import is one transaction, read like the contact import: a header row naming `email` and optionally `reason`
// and `details`; each row's reason is its own cell, or the request's default `reason` when the cell is empty or
// the column absent. Good rows are added, addresses already on the list are skipped (an entry keeps its first
// reason), bad rows are reported by line and left out; a file that cannot be read at all changes nothing. The
// export streams the list in pages, so its size never sits in memory.
import type { AppContext } from '../../context.js';
import { insertRows } from '../../db/batcher.js';
import { placeholders, queryRows, readsOf } from '../../db/index.js';
import { addressKey, normaliseAddress } from '../../core/address.js';
import { badRequest } from '../../core/errors.js';
import { csvLine, readCsvLines } from './csv.js';
import { MAX_IMPORT_ROWS, MAX_REPORTED_ERRORS } from './contacts-csv.js';
import { SUPPRESSION_REASONS, type SuppressionRow } from './suppressions.js';

type Reason = (typeof SUPPRESSION_REASONS)[number];

/** Columns an export writes that an import reads back and lets be. */
const EXPORT_ONLY_COLUMNS = ['email_id', 'created_at'];
/** Entries read per page of an export. */
const EXPORT_PAGE = 1_000;
/** Longest `details` cell kept. */
const MAX_DETAILS = 500;

export interface SuppressionImportResult {
  created: number;
  /** Rows whose address is on the list already (its entry is kept as it is). */
  skipped: number;
  failed: number;
  /** The first MAX_REPORTED_ERRORS rows left out, each with its line and why. */
  errors: Array<{ line: number; email: string | null; error: string }>;
  /** Header columns that are none of email, reason, details (nor an export's email_id, created_at). */
  ignored_columns: string[];
}

const isReason = (v: string): v is Reason => (SUPPRESSION_REASONS as readonly string[]).includes(v);

export async function importSuppressions(ctx: AppContext, teamId: string, input: { csv: string; reason?: Reason | undefined }): Promise<SuppressionImportResult> {
  const lines = readCsvLines(input.csv);
  if (lines.length === 0) throw badRequest('csv: must have a header row');
  if (lines.length - 1 > MAX_IMPORT_ROWS) throw badRequest(`csv: at most ${MAX_IMPORT_ROWS.toLocaleString('en')} addresses per import (found ${(lines.length - 1).toLocaleString('en')} rows)`);

  const header = lines[0]!.cells.map((c) => c.trim().toLowerCase());
  const column = (name: string) => header.indexOf(name);
  const [emailAt, reasonAt, detailsAt] = [column('email'), column('reason'), column('details')];
  if (emailAt < 0) throw badRequest('csv: the header row must have an email column');
  if (reasonAt < 0 && input.reason === undefined) throw badRequest('csv: the header row has no reason column; give one, or a default `reason` (bounce, complaint or manual)');
  const named = new Set<string>();
  for (const h of header) {
    if (h !== '' && named.has(h)) throw badRequest(`csv: the header names '${h}' twice`);
    named.add(h);
  }
  const ignored = lines[0]!.cells.map((c) => c.trim()).filter((c) => c !== '' && !['email', 'reason', 'details', ...EXPORT_ONLY_COLUMNS].includes(c.toLowerCase()));

  const errors: SuppressionImportResult['errors'] = [];
  let failed = 0;
  const fail = (line: number, email: string | null, error: string) => {
    failed++;
    if (errors.length < MAX_REPORTED_ERRORS) errors.push({ line, email, error });
  };
  const rows = new Map<string, { line: number; reason: Reason; details: string | null }>();
  for (const { cells, line } of lines.slice(1)) {
    const cell = (at: number) => (at >= 0 ? (cells[at] ?? '').trim() : '');
    const given = cell(emailAt);
    const address = normaliseAddress(given);
    if (!address) {
      fail(line, given || null, given === '' ? 'email: is empty' : 'email: must be a valid email address');
      continue;
    }
    const reasonCell = cell(reasonAt).toLowerCase();
    const reason = reasonCell === '' ? input.reason : reasonCell;
    if (reason === undefined) {
      fail(line, given, 'reason: is empty and no default reason was given');
      continue;
    }
    if (!isReason(reason)) {
      fail(line, given, `reason: must be one of ${SUPPRESSION_REASONS.join(', ')}`);
      continue;
    }
    const details = cell(detailsAt);
    if (details.length > MAX_DETAILS) {
      fail(line, given, `details: must be at most ${MAX_DETAILS} characters`);
      continue;
    }
    const key = addressKey(address);
    const earlier = rows.get(key);
    if (earlier) fail(line, given, `repeats the address of line ${earlier.line}`);
    else rows.set(key, { line, reason, details: details || null });
  }

  return ctx.db.transaction(async (trx) => {
    const keys = [...rows.keys()];
    const listed = new Set<string>();
    for (let i = 0; i < keys.length; i += 500) {
      const chunk = keys.slice(i, i + 500);
      for (const r of await queryRows<{ email: string }>(trx, `SELECT email FROM suppressions WHERE team_id = ? AND email IN (${placeholders(chunk.length)})`, [teamId, ...chunk])) listed.add(r.email);
    }
    const at = ctx.clock.now().toISOString();
    const fresh: Array<Omit<SuppressionRow, 'id'>> = [];
    for (const [key, r] of rows) if (!listed.has(key)) fresh.push({ team_id: teamId, email: key, reason: r.reason, details: r.details, email_id: null, created_at: at });
    await insertRows(trx, 'suppressions', fresh);
    return { created: fresh.length, skipped: listed.size, failed, errors, ignored_columns: ignored };
  });
}

/**
 * The team's list as CSV, oldest first: email, reason, details, email_id, created_at. Yields the text in
 * pieces of EXPORT_PAGE entries, read page by page (keyset on the row id) from the read-only connections.
 */
export async function* exportSuppressions(ctx: AppContext, teamId: string): AsyncGenerator<string> {
  const reads = readsOf(ctx.db);
  yield csvLine(['email', 'reason', 'details', 'email_id', 'created_at']);
  let after = 0;
  for (;;) {
    const rows = await queryRows<SuppressionRow>(reads, 'SELECT * FROM suppressions WHERE team_id = ? AND id > ? ORDER BY id LIMIT ?', [teamId, after, EXPORT_PAGE]);
    if (rows.length === 0) return;
    after = rows[rows.length - 1]!.id;
    yield rows.map((r) => csvLine([r.email, r.reason, r.details ?? '', r.email_id ?? '', r.created_at])).join('');
  }
}
