// Route choice, table-driven: patterns, relay URLs, and the order rules → global relay → direct.
import t from 'tap';
import type { RouteRule } from '../../src/config.js';
import { chooseRoute, globMatch, needsMxHosts, parseRelayUrl } from '../../src/mta/routes.js';

t.test('globMatch', async (t) => {
  const rows: Array<[pattern: string, name: string, expected: boolean]> = [
    ['outlook.com', 'outlook.com', true],
    ['outlook.com', 'OUTLOOK.COM.', true],
    ['outlook.com', 'hotmail.com', false],
    ['outlook.com', 'eu.outlook.com', false],
    ['*.outlook.com', 'eu.outlook.com', true],
    ['*.outlook.com', 'a.b.outlook.com', true],
    ['*.outlook.com', 'outlook.com', false],
    ['*.outlook.com', 'notoutlook.com', false],
    ['*.protection.outlook.com', 'contoso-com.mail.protection.outlook.com', true],
    ['hotmail.*', 'hotmail.co.uk', true],
    ['mx?.example.com', 'mx1.example.com', true],
    ['mx?.example.com', 'mx10.example.com', false],
    ['*', 'anything.test', true],
    ['a+b.com', 'a+b.com', true],
    ['a+b.com', 'aab.com', false],
  ];
  for (const [pattern, name, expected] of rows) t.equal(globMatch(pattern, name), expected, `${pattern} ~ ${name}`);
});

t.test('parseRelayUrl', async (t) => {
  t.same(parseRelayUrl('smtp://relay.example.com'), { host: 'relay.example.com', port: 587, implicitTls: false, auth: undefined });
  t.same(parseRelayUrl('smtps://relay.example.com'), { host: 'relay.example.com', port: 465, implicitTls: true, auth: undefined });
  t.same(parseRelayUrl('smtp://apikey:p%40ss%3Aword@smtp.example.net:2525'), { host: 'smtp.example.net', port: 2525, implicitTls: false, auth: { user: 'apikey', pass: 'p@ss:word' } });
  t.same(parseRelayUrl('smtp://[::1]:25'), { host: '::1', port: 25, implicitTls: false, auth: undefined });
  t.throws(() => parseRelayUrl('http://relay.example.com'), /smtp:\/\/ or smtps:\/\//);
});

t.test('chooseRoute', async (t) => {
  const rules: RouteRule[] = [
    { name: 'microsoft', match: ['outlook.com', '*.outlook.com', 'hotmail.com'], relay: 'smtp://u:p@ms-relay.example:587' },
    { name: 'm365-tenants', match: ['mx:*.mail.protection.outlook.com'], relay: 'smtps://m365-relay.example' },
    { name: 'gmail-direct', match: ['gmail.com'], relay: null },
  ];
  const global = 'smtp://global-relay.example';

  t.match(chooseRoute('hotmail.com', rules, global, []), { kind: 'relay', name: 'microsoft', relay: { host: 'ms-relay.example', port: 587, auth: { user: 'u', pass: 'p' } } });
  t.match(chooseRoute('eu.outlook.com', rules, null, []), { kind: 'relay', name: 'microsoft' });
  t.match(chooseRoute('contoso.com', rules, global, ['contoso-com.mail.protection.outlook.com']), { kind: 'relay', name: 'm365-tenants', relay: { host: 'm365-relay.example', port: 465, implicitTls: true } });
  t.same(chooseRoute('gmail.com', rules, global, ['gmail-smtp-in.l.google.com']), { kind: 'direct', name: 'gmail-direct' });
  t.match(chooseRoute('example.org', rules, global, ['mx.example.org']), { kind: 'relay', name: 'default', relay: { host: 'global-relay.example' } });
  t.same(chooseRoute('example.org', rules, null, ['mx.example.org']), { kind: 'direct', name: 'default' });
  // The MX hosts are unknown (temporary DNS failure) and an mx: rule must be checked: no decision.
  t.same(chooseRoute('example.org', rules, global, null), { kind: 'undecided', name: 'm365-tenants' });
  // …unless an earlier domain rule already decided.
  t.match(chooseRoute('outlook.com', rules, global, null), { kind: 'relay', name: 'microsoft' });
  // No rules: the global relay, else direct.
  t.match(chooseRoute('example.org', [], global, null), { kind: 'relay', name: 'default' });
  t.same(chooseRoute('example.org', [], null, null), { kind: 'direct', name: 'default' });
});

t.test('needsMxHosts', async (t) => {
  t.equal(needsMxHosts([]), false);
  t.equal(needsMxHosts([{ name: 'a', match: ['outlook.com'], relay: null }]), false);
  t.equal(needsMxHosts([{ name: 'a', match: ['outlook.com', 'MX:*.google.com'], relay: null }]), true);
});
