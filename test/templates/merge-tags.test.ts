// Merge tags rendered by substitution (a part of text and plain outputs) render exactly what Liquid renders,
// and anything else still goes through Liquid.
import t from 'tap';
import { parsePart, renderPart, type Part } from '../../src/services/templates/merge-tags.js';

const scopes: Array<Record<string, unknown>> = [
  { contact: { first_name: 'Ann', plan: 'pro', email: 'ann@x.example', visits: 0, score: 2.5, properties: {} }, unsubscribe_url: 'https://box.example/unsubscribe/abc?x=1&y=2' },
  { contact: { first_name: '', plan: null, email: `o'brien+<tag>@x.example`, tagline: `"Quotes" & <b>bold</b>` }, unsubscribe_url: '' },
  { contact: { first_name: 'Zoë', nested: { city: 'Köln' } } },
  {},
];

const sources = [
  'Hello {{ contact.first_name }}',
  'Hi {{ contact.first_name | default: "there" }}, {{contact.plan|default:\'free\'}} / {{ contact.visits }} / {{ contact.score | default: "n/a" }}',
  '<p>{{ contact.tagline }} {{ contact.tagline | raw }} {{{ contact.tagline }}} <a href="{{ unsubscribe_url }}">x</a></p>',
  '<p>{{ contact.email }} {{ contact.nested.city }} {{ contact.missing.deep }} {{ nobody }}</p>',
  'text only }} and } braces',
];

t.test('a plain part renders by substitution, as Liquid renders it', async (t) => {
  for (const part of ['subject', 'html', 'text'] as Part[]) {
    for (const source of sources) {
      const parsed = parsePart(part, source);
      t.ok(parsed.plan, `${part}: ${source} is substituted`);
      for (const scope of scopes) t.equal(renderPart(parsed, scope), renderPart({ ...parsed, plan: null }, scope), `${part}: ${source}`);
    }
  }
});

t.test('tags, other filters, literals and values Liquid must render go through Liquid', async (t) => {
  for (const source of ['{% if contact.plan %}x{% endif %}', '{{ contact.first_name | upcase }}', '{{- contact.first_name }}', '{{ true }}', '{{ contact.first_name.size }}', '{{ contact["first_name"] }}', '{{ "a" }}']) {
    t.equal(parsePart('html', source).plan, null, source);
  }
  // A value that is not a string, number or nothing (a boolean, a list): Liquid renders the part.
  const parsed = parsePart('html', '<p>{{ contact.flag | default: "no" }} {{ contact.tags }}</p>');
  t.ok(parsed.plan);
  for (const contact of [{ flag: false, tags: ['a', 'b'] }, { flag: true, tags: [] }]) {
    t.equal(renderPart(parsed, { contact }), renderPart({ ...parsed, plan: null }, { contact }));
  }
});
