// Contacts in and out as CSV (spec: POST /contacts/import, GET /contacts/export). The import is one
// transaction: the good rows are created or updated, the bad ones reported by line and left out; anything that
// fails the whole file (no email column, over 10,000 rows, a quote never closed, an unknown segment) changes
// nothing. The export streams the team's contacts in pages, so its size never sits in memory.
import type { AppContext } from '../../context.js';
import { insertRows, updateFromValues } from '../../db/batcher.js';
import { queryRows, readsOf } from '../../db/index.js';
import { sqlLiteral } from '../../db/script.js';
import { addressKey, normaliseAddress } from '../../core/address.js';
import { badRequest, unprocessable } from '../../core/errors.js';
import { newPublicId } from '../../core/ids.js';
import { eventRow, recordEvents, type EventRow } from '../../events/recorder.js';
import { contactEventData, searchText, toContact, MAX_NAME, type ContactRow } from './contacts.js';
import { readCsvLines } from './csv.js';
import { findSegment } from './membership.js';
import { parseBooleanText, propertyTypes, propertyValueFromText, type Properties, type PropertyType } from './properties.js';

/** Rows (contacts) one import may hold (spec: Contacts per import). */
export const MAX_IMPORT_ROWS = 10_000;
/** Bad rows reported one by one; past this many the answer says how many more there were. */
export const MAX_REPORTED_ERRORS = 100;
/** Contacts read per page of an export. */
export const EXPORT_PAGE = 1_000;

/** The contact's own columns; an export's `id` and `created_at` are read back by an import and let be. */
const FIELD_COLUMNS = ['email', 'first_name', 'last_name', 'unsubscribed'] as const;
const EXPORT_ONLY_COLUMNS = ['id', 'created_at', 'updated_at'];

export interface ImportError {
  /** The line of the CSV text the row starts on (the header is line 1). */
  line: number;
  email: string | null;
  error: string;
}

export interface ImportResult {
  created: number;
  updated: number;
  /** Rows of contacts that exist already and that the row would not change. */
  skipped: number;
  /** Rows left out, each with why (the first MAX_REPORTED_ERRORS). */
  errors: ImportError[];
  /** Rows left out in all (errors lists at most MAX_REPORTED_ERRORS of them). */
  failed: number;
  /** Header columns that name neither a contact field nor a defined property: their cells were not read. */
  ignored_columns: string[];
}

/** How each header column is read. */
type Column = { kind: 'field'; name: (typeof FIELD_COLUMNS)[number] } | { kind: 'property'; name: string; type: PropertyType } | { kind: 'ignored' };

function readHeader(header: string[], types: Map<string, PropertyType>): { columns: Column[]; ignored: string[] } {
  const byLowerName = new Map([...types].map(([name, type]) => [name.toLowerCase(), { name, type }]));
  const seen = new Set<string>();
  const ignored: string[] = [];
  const columns = header.map((raw): Column => {
    const title = raw.trim();
    const key = title.toLowerCase();
    if (seen.has(key)) throw badRequest(`csv: the header names '${title}' twice`);
    seen.add(key);
    if ((FIELD_COLUMNS as readonly string[]).includes(key)) return { kind: 'field', name: key as (typeof FIELD_COLUMNS)[number] };
    const property = types.has(title) ? { name: title, type: types.get(title)! } : byLowerName.get(key);
    if (property) return { kind: 'property', ...property };
    if (!EXPORT_ONLY_COLUMNS.includes(key) && title !== '') ignored.push(title);
    return { kind: 'ignored' };
  });
  if (!columns.some((c) => c.kind === 'field' && c.name === 'email')) throw badRequest('csv: the header row must have an email column');
  return { columns, ignored };
}

/** One row's values: what it sets (an empty cell sets nothing). */
interface RowChange {
  line: number;
  email: string;
  key: string;
  first_name?: string;
  last_name?: string;
  unsubscribed?: boolean;
  properties: Properties;
}

function readRow(columns: Column[], cells: string[], line: number): RowChange {
  const change: Partial<RowChange> & { properties: Properties } = { line, properties: {} };
  columns.forEach((column, i) => {
    const cell = (cells[i] ?? '').trim();
    if (column.kind === 'ignored' || (cell === '' && !(column.kind === 'field' && column.name === 'email'))) return;
    if (column.kind === 'property') {
      change.properties[column.name] = propertyValueFromText(column.type, cell, column.name);
      return;
    }
    switch (column.name) {
      case 'email': {
        const normal = normaliseAddress(cell);
        if (!normal) throw badRequest(cell === '' ? 'email: is empty' : 'email: must be a valid email address');
        change.email = normal;
        change.key = addressKey(normal);
        return;
      }
      case 'first_name':
      case 'last_name':
        if (cell.length > MAX_NAME) throw badRequest(`${column.name}: must be at most ${MAX_NAME} characters`);
        change[column.name] = cell;
        return;
      case 'unsubscribed': {
        const b = parseBooleanText(cell);
        if (b === null) throw badRequest('unsubscribed: must be true or false');
        change.unsubscribed = b;
      }
    }
  });
  return change as RowChange;
}

/** The email cell of a row, for a bad row's report. */
const emailCell = (columns: Column[], cells: string[]) => {
  const i = columns.findIndex((c) => c.kind === 'field' && c.name === 'email');
  return i >= 0 && cells[i] ? cells[i]!.trim() || null : null;
};

export async function importContacts(ctx: AppContext, teamId: string, input: { csv: string; segmentId?: string | undefined }): Promise<ImportResult> {
  const records = readCsvLines(input.csv);
  if (records.length === 0) throw badRequest('csv: must have a header row');
  const rowCount = records.length - 1;
  if (rowCount > MAX_IMPORT_ROWS) throw badRequest(`csv: at most ${MAX_IMPORT_ROWS.toLocaleString('en')} contacts per import (found ${rowCount.toLocaleString('en')} rows)`);

  return ctx.db.transaction(async (trx) => {
    const segment = input.segmentId !== undefined ? await findSegment(trx, teamId, input.segmentId) : undefined;
    if (segment && segment.rules !== null) throw unprocessable('Segment is dynamic: its members are the contacts its rules match');
    const types = await propertyTypes(trx, teamId);
    const { columns, ignored } = readHeader(records[0]!.cells, types);

    // Each row read on its own: a bad one is reported and left out; a repeated address is reported too.
    const errors: ImportError[] = [];
    let failed = 0;
    const fail = (line: number, email: string | null, error: string) => {
      failed++;
      if (errors.length < MAX_REPORTED_ERRORS) errors.push({ line, email, error });
    };
    const rows = new Map<string, RowChange>();
    for (const { cells, line } of records.slice(1)) {
      try {
        const change = readRow(columns, cells, line);
        const earlier = rows.get(change.key);
        if (earlier) fail(line, change.email, `repeats the address of line ${earlier.line}`);
        else rows.set(change.key, change);
      } catch (err) {
        fail(line, emailCell(columns, cells), err instanceof Error ? err.message : String(err));
      }
    }

    // The contacts that exist already, by address.
    const keys = [...rows.keys()];
    const existing = new Map<string, ContactRow>();
    for (let i = 0; i < keys.length; i += 500) {
      const chunk = keys.slice(i, i + 500);
      const found = await queryRows<ContactRow>(trx, `SELECT * FROM contacts WHERE team_id = ? AND email_key IN (${chunk.map(() => '?').join(', ')})`, [teamId, ...chunk]);
      for (const c of found) existing.set(c.email_key, c);
    }

    const now = ctx.clock.now();
    const at = now.toISOString();
    const inserts: Array<Omit<ContactRow, 'pk'>> = [];
    const updates: ContactRow[] = [];
    const events: Array<Omit<EventRow, 'id'>> = [];
    let skipped = 0;
    for (const change of rows.values()) {
      const old = existing.get(change.key);
      if (!old) {
        const first = change.first_name ?? null;
        const last = change.last_name ?? null;
        const row: Omit<ContactRow, 'pk'> = {
          id: newPublicId('ct', now.getTime()),
          team_id: teamId,
          email: change.email,
          email_key: change.key,
          first_name: first,
          last_name: last,
          unsubscribed: change.unsubscribed ? 1 : 0,
          properties: JSON.stringify(change.properties),
          search: searchText(change.email, first, last),
          last_sent_at: null,
          last_opened_at: null,
          last_clicked_at: null,
          opt_in_status: 'none',
          confirmed_at: null,
          created_at: at,
          updated_at: at,
        };
        inserts.push(row);
        events.push(eventRow(now, teamId, 'contact.created', contactEventData(toContact({ pk: 0, ...row }))));
        continue;
      }
      const properties = { ...(JSON.parse(old.properties) as Properties), ...change.properties };
      const next: ContactRow = {
        ...old,
        first_name: change.first_name ?? old.first_name,
        last_name: change.last_name ?? old.last_name,
        unsubscribed: change.unsubscribed === undefined ? old.unsubscribed : change.unsubscribed ? 1 : 0,
        properties: JSON.stringify(properties),
      };
      const same = next.first_name === old.first_name && next.last_name === old.last_name && next.unsubscribed === old.unsubscribed && samePropertiesText(next.properties, old.properties);
      if (same) {
        skipped++;
        continue;
      }
      next.search = searchText(next.email, next.first_name, next.last_name);
      next.updated_at = at;
      updates.push(next);
      const contact = toContact(next);
      events.push(eventRow(now, teamId, 'contact.updated', contactEventData(contact)));
      if (!old.unsubscribed && next.unsubscribed) events.push(eventRow(now, teamId, 'contact.unsubscribed', { contact_id: contact.id, email: contact.email, topic_id: null, email_id: null }));
    }
    for (const row of inserts) {
      if (row.unsubscribed) events.push(eventRow(now, teamId, 'contact.unsubscribed', { contact_id: row.id, email: row.email, topic_id: null, email_id: null }));
    }

    await insertRows(trx, 'contacts', inserts);
    await updateFromValues(
      trx,
      'contacts',
      ['pk'],
      { first_name: 'v.first_name', last_name: 'v.last_name', unsubscribed: 'v.unsubscribed', properties: 'v.properties', search: 'v.search', updated_at: 'v.updated_at' },
      updates.map((u) => ({ pk: u.pk, first_name: u.first_name, last_name: u.last_name, unsubscribed: u.unsubscribed, properties: u.properties, search: u.search, updated_at: u.updated_at })),
    );
    await recordEvents(trx, events);
    if (segment) {
      // Every good row's contact joins the segment (those already in it stay).
      await trx.raw(
        `INSERT INTO segment_contacts (segment_pk, contact_pk, created_at)
         SELECT ?, pk, ? FROM contacts WHERE team_id = ? AND email_key IN (SELECT value FROM json_each(?)) ON CONFLICT DO NOTHING`,
        [segment.pk, at, teamId, JSON.stringify(keys)],
      );
    }
    return { created: inserts.length, updated: updates.length, skipped, errors, failed, ignored_columns: ignored };
  });
}

/** Whether two properties texts hold the same keys and values (the order of keys aside). */
function samePropertiesText(a: string, b: string): boolean {
  if (a === b) return true;
  const x = JSON.parse(a) as Properties;
  const y = JSON.parse(b) as Properties;
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((k) => x[k] === y[k]);
}

/** A column's value as one CSV cell, in SQL: quoted when it holds a quote, a comma or a line break (RFC 4180). */
const csvCell = (expr: string) =>
  `(SELECT CASE WHEN v IS NULL THEN '' WHEN v GLOB ('*[",' || char(10, 13) || ']*') THEN '"' || replace(v, '"', '""') || '"' ELSE v END FROM (SELECT CAST(${expr} AS TEXT) AS v))`;

/** A property's value as text: a boolean as true/false, as the import reads it. */
const propertyText = (name: string) => {
  const path = sqlLiteral(`$."${name}"`);
  return `CASE json_type(properties, ${path}) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE json_extract(properties, ${path}) END`;
};

/**
 * The team's contacts as CSV, oldest first: a header row, then one row per contact — id, email, first_name,
 * last_name, unsubscribed, created_at, then each defined property (A–Z). Yields the text in pieces of
 * EXPORT_PAGE contacts, read page by page (keyset on the row key) from the read-only connections; SQLite
 * writes each row's line, so a page costs the event loop one string per contact.
 */
export async function* exportContacts(ctx: AppContext, teamId: string): AsyncGenerator<string> {
  const reads = readsOf(ctx.db);
  const properties = [...(await propertyTypes(reads, teamId)).keys()].sort();
  const header = ['id', 'email', 'first_name', 'last_name', 'unsubscribed', 'created_at', ...properties];
  const cells = [
    csvCell('id'),
    csvCell('email'),
    csvCell('first_name'),
    csvCell('last_name'),
    `CASE unsubscribed WHEN 0 THEN 'false' ELSE 'true' END`,
    'created_at',
    ...properties.map((p) => csvCell(propertyText(p))),
  ];
  const sql = `SELECT pk, ${cells.join(" || ',' || ")} AS line FROM contacts WHERE team_id = ? AND pk > ? ORDER BY pk LIMIT ?`;
  // Property names are letters, digits and _ (properties.ts): the header needs no quoting.
  yield header.join(',') + '\n';
  let after = 0;
  for (;;) {
    const rows = await queryRows<{ pk: number; line: string }>(reads, sql, [teamId, after, EXPORT_PAGE]);
    if (rows.length === 0) return;
    after = rows[rows.length - 1]!.pk;
    yield rows.map((r) => r.line).join('\n') + '\n';
  }
}
