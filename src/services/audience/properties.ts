// Contact property definitions (spec: Contact property definition): a team names its custom properties and
// their types (string, number, date, boolean); a contact's `properties` hold only defined keys, each a value
// of its type. Segment rules, imports and exports read the definitions.
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/index.js';
import { badRequest, conflict, notFound, unprocessable } from '../../core/errors.js';
import { newPublicId } from '../../core/ids.js';

export const PROPERTY_TYPES = ['string', 'number', 'date', 'boolean'] as const;
export type PropertyType = (typeof PROPERTY_TYPES)[number];
/** A value a contact's property may hold (a date as an ISO 8601 UTC date-time). */
export type PropertyValue = string | number | boolean;
export type Properties = Record<string, PropertyValue>;

/** Letters, digits and `_`, starting with a letter: a CSV column, a JSON key and a merge tag alike. */
export const PROPERTY_NAME = /^[A-Za-z][A-Za-z0-9_]{0,49}$/;
/** The contact's own fields: not usable as property names (a CSV column or a merge tag would be ambiguous). */
export const RESERVED_NAMES = new Set(['id', 'email', 'first_name', 'last_name', 'unsubscribed', 'created_at', 'updated_at', 'properties']);
/** Longest string value. */
export const MAX_STRING_VALUE = 2_000;
/** Definitions per team. */
export const MAX_PROPERTIES = 100;

export interface ContactProperty {
  id: string;
  name: string;
  type: PropertyType;
  created_at: string;
}

interface PropertyRow {
  pk: number;
  id: string;
  team_id: string;
  name: string;
  type: PropertyType;
  created_at: string;
  updated_at: string;
}

const toProperty = (r: PropertyRow): ContactProperty => ({ id: r.id, name: r.name, type: r.type, created_at: r.created_at });

/** The team's definitions by name. */
export async function propertyTypes(q: Queryable, teamId: string): Promise<Map<string, PropertyType>> {
  const rows = await q<PropertyRow>('contact_properties').where('team_id', teamId).select('name', 'type');
  return new Map(rows.map((r) => [r.name, r.type]));
}

export async function listProperties(ctx: AppContext, teamId: string): Promise<ContactProperty[]> {
  const rows = await ctx.db<PropertyRow>('contact_properties').where('team_id', teamId).orderBy('name');
  return rows.map(toProperty);
}

function checkName(name: string): void {
  if (!PROPERTY_NAME.test(name)) throw badRequest('name: must start with a letter and hold only letters, digits and _ (at most 50 characters)');
  if (RESERVED_NAMES.has(name.toLowerCase())) throw badRequest(`name: '${name}' is a contact field, not a custom property`);
}

async function findRow(q: Queryable, teamId: string, id: string): Promise<PropertyRow> {
  const row = await q<PropertyRow>('contact_properties').where({ team_id: teamId, id }).first();
  if (!row) throw notFound('Contact property not found');
  return row;
}

export async function createProperty(ctx: AppContext, teamId: string, input: { name: string; type: PropertyType }): Promise<ContactProperty> {
  checkName(input.name);
  return ctx.db.transaction(async (trx) => {
    const existing = await trx('contact_properties').where({ team_id: teamId }).select('name');
    if (existing.some((r: { name: string }) => r.name.toLowerCase() === input.name.toLowerCase())) throw conflict(`Contact property '${input.name}' already exists`);
    if (existing.length >= MAX_PROPERTIES) throw unprocessable(`Contact property limit reached: ${MAX_PROPERTIES} per team`);
    const now = ctx.clock.now();
    const row: Omit<PropertyRow, 'pk'> = { id: newPublicId('cp', now.getTime()), team_id: teamId, name: input.name, type: input.type, created_at: now.toISOString(), updated_at: now.toISOString() };
    await trx('contact_properties').insert(row);
    return toProperty({ pk: 0, ...row });
  });
}

/**
 * Renames a property (every contact's key and every segment rule that names it follow) or changes its type,
 * which only a property no contact holds a value of may do (values are not converted behind anyone's back).
 */
export async function updateProperty(ctx: AppContext, teamId: string, id: string, input: { name?: string | undefined; type?: PropertyType | undefined }): Promise<ContactProperty> {
  if (input.name !== undefined) checkName(input.name);
  return ctx.db.transaction(async (trx) => {
    const row = await findRow(trx, teamId, id);
    const now = ctx.clock.now().toISOString();
    const path = (name: string) => `$."${name}"`;
    if (input.type !== undefined && input.type !== row.type) {
      const used = await trx('contacts').where('team_id', teamId).whereRaw('json_type(properties, ?) IS NOT NULL', [path(row.name)]).first('pk');
      if (used) throw unprocessable(`Contact property '${row.name}' has values: its type cannot change (delete it, or rename it and define a new one)`);
    }
    if (input.name !== undefined && input.name !== row.name) {
      const clash = await trx('contact_properties').where('team_id', teamId).whereNot('pk', row.pk).whereRaw('lower(name) = ?', [input.name.toLowerCase()]).first('pk');
      if (clash) throw conflict(`Contact property '${input.name}' already exists`);
      // `->` answers the value as JSON text (a boolean stays true, not 1); json() makes json_set take it as JSON.
      await trx.raw(
        `UPDATE contacts SET properties = json_set(json_remove(properties, ?), ?, json(properties -> ?)), updated_at = ?
         WHERE team_id = ? AND json_type(properties, ?) IS NOT NULL`,
        [path(row.name), path(input.name), path(row.name), now, teamId, path(row.name)],
      );
      await renameInRules(trx, teamId, row.name, input.name, now);
    }
    const next = { name: input.name ?? row.name, type: input.type ?? row.type, updated_at: now };
    await trx('contact_properties').where('pk', row.pk).update(next);
    return toProperty({ ...row, ...next });
  });
}

/** Deletes a definition and the key from every contact; segment rules that name it then find it unset. */
export async function deleteProperty(ctx: AppContext, teamId: string, id: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const row = await findRow(trx, teamId, id);
    const path = `$."${row.name}"`;
    await trx.raw('UPDATE contacts SET properties = json_remove(properties, ?), updated_at = ? WHERE team_id = ? AND json_type(properties, ?) IS NOT NULL', [
      path,
      ctx.clock.now().toISOString(),
      teamId,
      path,
    ]);
    await trx('contact_properties').where('pk', row.pk).delete();
  });
}

/** Segment rules name properties as `properties.<name>`: a rename rewrites them. */
async function renameInRules(trx: Queryable, teamId: string, from: string, to: string, now: string): Promise<void> {
  const segments = await trx<{ pk: number; rules: string }>('segments').where('team_id', teamId).whereNotNull('rules').select('pk', 'rules');
  const old = `properties.${from}`;
  for (const s of segments) {
    let changed = false;
    const rewritten = JSON.stringify(JSON.parse(s.rules), (key, value: unknown) => {
      if (key === 'field' && value === old) {
        changed = true;
        return `properties.${to}`;
      }
      return value;
    });
    if (changed) await trx('segments').where('pk', s.pk).update({ rules: rewritten, updated_at: now });
  }
}

/** A property value as the API takes it (JSON), checked against its type; `where` names it in the error. */
export function propertyValue(type: PropertyType, value: unknown, where: string): PropertyValue {
  switch (type) {
    case 'string':
      if (typeof value !== 'string') throw badRequest(`${where}: must be a string`);
      if (value.length > MAX_STRING_VALUE) throw badRequest(`${where}: must be at most ${MAX_STRING_VALUE} characters`);
      return value;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw badRequest(`${where}: must be a number`);
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') throw badRequest(`${where}: must be true or false`);
      return value;
    case 'date': {
      const date = typeof value === 'string' ? parseDate(value) : null;
      if (date === null) throw badRequest(`${where}: must be a date (ISO 8601: 2026-05-01 or 2026-05-01T09:30:00Z)`);
      return date;
    }
  }
}

/** A property value from text (a CSV cell): the same rules, with numbers, booleans and dates read from their text. */
export function propertyValueFromText(type: PropertyType, text: string, where: string): PropertyValue {
  switch (type) {
    case 'number': {
      const n = text.trim() === '' ? NaN : Number(text);
      return propertyValue(type, Number.isFinite(n) ? n : text, where);
    }
    case 'boolean': {
      const b = parseBooleanText(text);
      return propertyValue(type, b ?? text, where);
    }
    default:
      return propertyValue(type, text, where);
  }
}

/** true/false, yes/no, 1/0 (any case); null for anything else. */
export function parseBooleanText(text: string): boolean | null {
  const t = text.trim().toLowerCase();
  if (t === 'true' || t === 'yes' || t === '1') return true;
  if (t === 'false' || t === 'no' || t === '0') return false;
  return null;
}

const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * An ISO 8601 date or date-time as a UTC date-time (`2026-05-01` → `2026-05-01T00:00:00.000Z`; a time without
 * an offset is UTC); null if it is not one, or names a day the calendar does not have (2026-02-30).
 */
export function parseDate(text: string): string | null {
  const m = DATE_TEXT.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h = '00', mi = '00', sec = '00', frac = '', zone = 'Z'] = m;
  const daysInMonth = new Date(Date.UTC(Number(y), Number(mo), 0)).getUTCDate();
  if (Number(mo) < 1 || Number(mo) > 12 || Number(d) < 1 || Number(d) > daysInMonth) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) return null;
  const offset = zone === 'Z' ? 'Z' : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
  const ms = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${sec}${frac.slice(0, 4)}${offset}`);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

/**
 * Merges a change into a contact's properties: each key must be defined and its value of its type; `null`
 * removes the key. Answers the merged object.
 */
export function mergeProperties(types: Map<string, PropertyType>, current: Properties, change: Record<string, unknown>, where = 'properties'): Properties {
  const next: Properties = { ...current };
  for (const [key, value] of Object.entries(change)) {
    const type = types.get(key);
    if (!type) throw badRequest(`${where}.${key}: is not a defined contact property (create it with POST /contact-properties)`);
    if (value === null) delete next[key];
    else next[key] = propertyValue(type, value, `${where}.${key}`);
  }
  return next;
}
