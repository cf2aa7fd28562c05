// Dynamic segment rules: a tree of conditions on a contact's fields, its typed properties, its topic
// subscriptions and its engagement, combined with all/any; compiled to one SQL predicate over `contacts AS c`,
// so membership is counted and paged by SQLite (json_extract over the properties column), never by loading
// contacts into JavaScript. Evaluated at every read: a dynamic segment is always current.
//
//   { "match": "all", "conditions": [
//       { "field": "properties.plan", "operator": "equals", "value": "pro" },
//       { "field": "created_at", "operator": "after", "value": "2026-01-01" },
//       { "match": "any", "conditions": [ { "field": "topic", "operator": "subscribed", "value": "top_…" },
//                                         { "field": "engagement", "operator": "equals", "value": "active_30d" } ] } ] }
import { DAY } from '../../core/clock.js';
import { badRequest } from '../../core/errors.js';
import { parseBooleanText, parseDate, type PropertyType } from './properties.js';

/**
 * SQL over `contacts AS c` and `topics AS t` (a LEFT JOIN of `topic_subscriptions AS s` on both): whether the
 * contact receives the topic's mail now — its choice, else the default, and never when unsubscribed from everything.
 */
/** SQL over `contacts AS c`: the contact is not waiting to confirm its address (double opt-in, signup forms). */
export const OPT_IN_SQL = "c.opt_in_status <> 'pending'";

export const SUBSCRIBED_SQL = `(c.unsubscribed = 0 AND ${OPT_IN_SQL} AND coalesce(s.subscribed, t.default_subscription = 'opt_in') = 1)`;

export const MATCHES = ['all', 'any'] as const;
export const OPERATORS = [
  'equals',
  'not_equals',
  'contains',
  'not_contains',
  'starts_with',
  'ends_with',
  'greater_than',
  'less_than',
  'before',
  'after',
  'is_set',
  'is_not_set',
  'subscribed',
  'not_subscribed',
] as const;
export type Operator = (typeof OPERATORS)[number];

/**
 * Engagement of a contact, from the contact's last send, open and click (kept by engagement tracking; until
 * an email to the contact has been tracked, no contact is in any of them):
 *   active_30d    opened or clicked an email in the last 30 days
 *   inactive_90d  was sent email, and opened or clicked nothing in the last 90 days
 *   never_opened  was sent email and never opened one
 */
export const ENGAGEMENT_SEGMENTS = ['active_30d', 'inactive_90d', 'never_opened'] as const;
export type EngagementSegment = (typeof ENGAGEMENT_SEGMENTS)[number];

export interface Condition {
  field: string;
  operator: Operator;
  value?: unknown;
}
export interface RuleGroup {
  match: (typeof MATCHES)[number];
  conditions: Array<Condition | RuleGroup>;
}

/** Depth of nested groups, and conditions in a whole tree. */
export const MAX_RULE_DEPTH = 3;
export const MAX_RULE_CONDITIONS = 50;

/** The contact's own fields and how each compares. */
const CONTACT_FIELDS: Record<string, { column: string; type: PropertyType }> = {
  email: { column: 'c.email_key', type: 'string' },
  first_name: { column: 'c.first_name', type: 'string' },
  last_name: { column: 'c.last_name', type: 'string' },
  unsubscribed: { column: 'c.unsubscribed', type: 'boolean' },
  created_at: { column: 'c.created_at', type: 'date' },
};

/** Which operators each type takes. */
const OPERATORS_OF: Record<PropertyType, readonly Operator[]> = {
  string: ['equals', 'not_equals', 'contains', 'not_contains', 'starts_with', 'ends_with', 'is_set', 'is_not_set'],
  number: ['equals', 'not_equals', 'greater_than', 'less_than', 'is_set', 'is_not_set'],
  date: ['before', 'after', 'is_set', 'is_not_set'],
  boolean: ['equals', 'is_set', 'is_not_set'],
};

export interface CompiledRule {
  sql: string;
  bindings: unknown[];
}

export interface RuleContext {
  /** The team's property definitions. */
  properties: Map<string, PropertyType>;
  /** A topic id of the team → its row key. */
  topics: Map<string, { pk: number }>;
  now: Date;
}

const isGroup = (node: Condition | RuleGroup): node is RuleGroup => 'conditions' in node;

/** Checks a rule tree (shape, fields, operators, value types) and compiles it; 400 naming what is wrong. */
export function compileRules(rules: RuleGroup, rc: RuleContext): CompiledRule {
  let count = 0;
  const bindings: unknown[] = [];
  const group = (g: RuleGroup, path: string, depth: number): string => {
    if (depth > MAX_RULE_DEPTH) throw badRequest(`${path}: groups nest at most ${MAX_RULE_DEPTH} deep`);
    if (g.conditions.length === 0) throw badRequest(`${path}.conditions: must hold at least one condition`);
    const parts = g.conditions.map((node, i) => {
      const at = `${path}.conditions.${i}`;
      if (isGroup(node)) return group(node, at, depth + 1);
      if (++count > MAX_RULE_CONDITIONS) throw badRequest(`rules: at most ${MAX_RULE_CONDITIONS} conditions`);
      return condition(node, at);
    });
    return `(${parts.join(g.match === 'all' ? ' AND ' : ' OR ')})`;
  };

  const condition = (c: Condition, at: string): string => {
    const { field, operator } = c;
    if (field === 'topic') return topicCondition(c, at);
    if (field === 'engagement') return engagementCondition(c, at);
    let column: string;
    let type: PropertyType;
    if (field.startsWith('properties.')) {
      const name = field.slice('properties.'.length);
      const defined = rc.properties.get(name);
      if (!defined) throw badRequest(`${at}.field: '${name}' is not a defined contact property`);
      type = defined;
      column = 'json_extract(c.properties, ?)';
      bindings.push(`$."${name}"`);
    } else {
      const known = CONTACT_FIELDS[field];
      if (!known) throw badRequest(`${at}.field: must be one of ${Object.keys(CONTACT_FIELDS).join(', ')}, properties.<name>, topic, engagement`);
      ({ column, type } = known);
    }
    if (!OPERATORS_OF[type].includes(operator)) throw badRequest(`${at}.operator: a ${type} field takes ${OPERATORS_OF[type].join(', ')}`);
    if (operator === 'is_set') return type === 'string' ? `coalesce(${column}, '') != ''` : `${column} IS NOT NULL`;
    if (operator === 'is_not_set') return type === 'string' ? `coalesce(${column}, '') = ''` : `${column} IS NULL`;
    const value = operand(type, c.value, `${at}.value`);
    const bind = (sql: string, times = 1): string => {
      for (let i = 0; i < times; i++) bindings.push(value);
      return sql;
    };
    switch (operator) {
      case 'equals':
        return bind(type === 'string' ? `${column} = ? COLLATE NOCASE` : `${column} = ?`);
      case 'not_equals':
        return bind(type === 'string' ? `coalesce(${column} != ? COLLATE NOCASE, 1)` : `coalesce(${column} != ?, 1)`);
      case 'contains':
        return bind(`instr(lower(${column}), ?) > 0`);
      case 'not_contains':
        return bind(`coalesce(instr(lower(${column}), ?) = 0, 1)`);
      case 'starts_with':
        return bind(`substr(lower(${column}), 1, length(?)) = ?`, 2);
      case 'ends_with':
        return bind(`substr(lower(${column}), -length(?)) = ?`, 2);
      case 'greater_than':
      case 'after':
        return bind(`${column} > ?`);
      case 'less_than':
      case 'before':
        return bind(`${column} < ?`);
      default:
        throw badRequest(`${at}.operator: not valid here`);
    }
  };

  const topicCondition = (c: Condition, at: string): string => {
    if (c.operator !== 'subscribed' && c.operator !== 'not_subscribed') throw badRequest(`${at}.operator: a topic condition takes subscribed or not_subscribed`);
    const topic = typeof c.value === 'string' ? rc.topics.get(c.value) : undefined;
    if (!topic) throw badRequest(`${at}.value: must be the id of one of the team's subscription topics`);
    bindings.push(topic.pk);
    // Who the topic reaches, as its subscribers list says (SUBSCRIBED_SQL).
    const subscribed = `EXISTS (SELECT 1 FROM topics AS t LEFT JOIN topic_subscriptions AS s ON s.topic_pk = t.pk AND s.contact_pk = c.pk WHERE t.pk = ? AND ${SUBSCRIBED_SQL})`;
    return c.operator === 'subscribed' ? subscribed : `NOT (${subscribed})`;
  };

  const engagementCondition = (c: Condition, at: string): string => {
    if (c.operator !== 'equals' && c.operator !== 'not_equals') throw badRequest(`${at}.operator: an engagement condition takes equals or not_equals`);
    if (!ENGAGEMENT_SEGMENTS.includes(c.value as EngagementSegment)) throw badRequest(`${at}.value: must be one of ${ENGAGEMENT_SEGMENTS.join(', ')}`);
    const sql = engagementPredicate(c.value as EngagementSegment, rc.now, bindings);
    return c.operator === 'equals' ? sql : `NOT ${sql}`;
  };

  return { sql: group(rules, 'rules', 1), bindings };
}

/** The predicate of an engagement segment over `contacts AS c`, its values pushed onto `bindings`. */
export function engagementPredicate(segment: EngagementSegment, now: Date, bindings: unknown[]): string {
  const since = (days: number) => new Date(now.getTime() - days * DAY).toISOString();
  switch (segment) {
    case 'active_30d':
      bindings.push(since(30), since(30));
      return '(c.last_opened_at >= ? OR c.last_clicked_at >= ?)';
    case 'inactive_90d':
      bindings.push(since(90), since(90));
      return '(c.last_sent_at IS NOT NULL AND coalesce(c.last_opened_at < ?, 1) AND coalesce(c.last_clicked_at < ?, 1))';
    case 'never_opened':
      return '(c.last_sent_at IS NOT NULL AND c.last_opened_at IS NULL)';
  }
}

/** A condition's value as its field's type compares it (strings lower-cased for the case-blind operators). */
function operand(type: PropertyType, value: unknown, at: string): unknown {
  switch (type) {
    case 'string':
      if (typeof value !== 'string' || value === '') throw badRequest(`${at}: must be a non-empty string`);
      return value.toLowerCase();
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw badRequest(`${at}: must be a number`);
      return value;
    case 'boolean': {
      const b = typeof value === 'boolean' ? value : typeof value === 'string' ? parseBooleanText(value) : null;
      if (b === null) throw badRequest(`${at}: must be true or false`);
      return b ? 1 : 0;
    }
    case 'date': {
      const d = typeof value === 'string' ? parseDate(value) : null;
      if (d === null) throw badRequest(`${at}: must be a date (ISO 8601)`);
      return d;
    }
  }
}
