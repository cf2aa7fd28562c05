// The checks that need only the address, table-driven: syntax (with its reasons), role accounts, the
// disposable list, typo suggestions and the edit distance under them.
import t from 'tap';
import {
  BIG_PROVIDERS, checkSyntax, editDistance, isDisposableDomain, isRoleAccount, suggestDomain, TLD_TYPOS
} from '../../src/services/automation/address-checks.js';

t.test('syntax: valid addresses, normalised as the send path writes them', async (t) => {
  const cases: Array<[input: string, address: string, flags: { smtputf8: boolean; idn: boolean }]> = [
    ['ann@example.com', 'ann@example.com', { smtputf8: false, idn: false }],
    ['Ann.Lee+news@Example.COM', 'Ann.Lee+news@example.com', { smtputf8: false, idn: false }],
    ['"ann lee"@example.com', '"ann lee"@example.com', { smtputf8: false, idn: false }],
    ["o'brien!#$%&*/=?^_`{|}~-@example.org", "o'brien!#$%&*/=?^_`{|}~-@example.org", { smtputf8: false, idn: false }],
    ['anna@bücher.example', 'anna@xn--bcher-kva.example', { smtputf8: false, idn: true }],
    ['anna@xn--bcher-kva.example', 'anna@xn--bcher-kva.example', { smtputf8: false, idn: true }],
    ['用户@例子.广告', '用户@xn--fsqu00a.xn--4rr70v', { smtputf8: true, idn: true }],
    ['josé@example.com', 'josé@example.com', { smtputf8: true, idn: false }],
    [`${'a'.repeat(64)}@example.com`, `${'a'.repeat(64)}@example.com`, { smtputf8: false, idn: false }],
  ];
  for (const [input, address, flags] of cases) {
    const s = checkSyntax(input);
    t.same({ valid: s.valid, address: s.address, message: s.message }, { valid: true, address, message: null }, input);
    t.same({ smtputf8: s.smtputf8, idn: s.idn }, flags, `${input}: flags`);
    t.equal(`${s.local}@${s.domain}`, address, `${input}: local part and domain`);
  }
});

t.test('syntax: invalid addresses, each with its reason', async (t) => {
  const label63 = 'a'.repeat(63);
  const cases: Array<[input: string, message: RegExp]> = [
    ['', /^is empty$/],
    ['ann.example.com', /^has no @$/],
    ['@example.com', /^has an empty local part$/],
    ['ann@', /^has no domain after the @$/],
    [`${'a'.repeat(65)}@example.com`, /longer than 64 octets/],
    [`${'é'.repeat(33)}@example.com`, /longer than 64 octets/], // 33 characters, 66 octets
    ['ann..lee@example.com', /local part that is neither a dot-atom/],
    ['.ann@example.com', /local part that is neither a dot-atom/],
    ['ann lee@example.com', /local part that is neither a dot-atom/],
    ['ann@example', /without a top-level domain/],
    ['ann@-bad.example', /not a valid host name/],
    ['ann@example.123', /not a valid (domain|host) name/],
    ['ann@exa_mple.com', /not a valid host name/],
    ['ann@[192.0.2.1]', /address literal/],
    ['ann@xn--zz.example', /not a valid domain name \(IDNA\)|not a valid host name/],
    [`ann@${label63}.${label63}.${label63}.${label63}.com`, /domain longer than 253 octets/],
    [`${'a'.repeat(64)}@${label63}.${label63}.${label63}.com`, /^is longer than 254 octets/], // 260: each part within its own bound
  ];
  for (const [input, message] of cases) {
    const s = checkSyntax(input);
    t.equal(s.valid, false, `${input}: not valid`);
    t.match(s.message, message, input);
    t.same([s.address, s.local, s.domain], [null, null, null], `${input}: no parts`);
  }
});

t.test('role accounts: a named list, compared without case, +tag or separators', async (t) => {
  for (const local of ['postmaster', 'Info', 'noreply', 'no-reply', 'no_reply', 'No.Reply', 'support+eu', 'mailer-daemon', 'abuse', 'webmaster', 'sales']) {
    t.ok(isRoleAccount(local), local);
  }
  for (const local of ['ann', 'information', 'john.sales', 'supporter', 'infos', 'reply']) t.notOk(isRoleAccount(local), local);
});

t.test('disposable domains come from the package list, subdomains included', async (t) => {
  for (const d of ['mailinator.com', 'guerrillamail.com', 'yopmail.com', '10minutemail.com', 'inbox.mailinator.com']) t.ok(isDisposableDomain(d), d);
  for (const d of ['gmail.com', 'example.com', 'com', 'mailinator.example']) t.notOk(isDisposableDomain(d), d);
});

t.test('typos: a big provider a small edit away, a mistyped TLD', async (t) => {
  const cases: Array<[domain: string, suggestion: string | null]> = [
    ['gmial.com', 'gmail.com'], // transposition
    ['gmai.com', 'gmail.com'],
    ['gmaill.com', 'gmail.com'],
    ['gnail.con', 'gmail.com'], // a slip and a TLD typo
    ['gmail.con', 'gmail.com'],
    ['yahooo.com', 'yahoo.com'],
    ['hotmial.com', 'hotmail.com'],
    ['hotmal.con', 'hotmail.com'],
    ['outlok.com', 'outlook.com'],
    ['iclod.com', 'icloud.com'],
    ['aol.con', 'aol.com'], // a short name: only its TLD is corrected
    ['example.con', 'example.com'],
    ['example.ogr', 'example.org'],
    ['gmail.com', null],
    ['mail.com', null], // a provider itself, one edit from gmail.com
    ['ymail.com', null],
    ['email.com', null],
    ['gmx.de', null],
    ['example.com', null],
    ['msm.com', null], // near msn.com, but short names are not guessed
    ['tmail.com', null], // as near gmail.com as ymail.com: no guess
    ['gmailcom.com', null],
  ];
  for (const [domain, suggestion] of cases) t.equal(suggestDomain(domain), suggestion, domain);
  t.ok(BIG_PROVIDERS.every((p) => suggestDomain(p) === null), 'no provider is a typo of another');
  t.ok(Object.keys(TLD_TYPOS).every((tld) => !BIG_PROVIDERS.some((p) => p.endsWith(`.${tld}`))), 'no typo is a TLD a provider uses');
});

t.test('edit distance (optimal string alignment), cut off past its bound', async (t) => {
  const cases: Array<[string, string, number, number]> = [
    ['gmail.com', 'gmail.com', 2, 0],
    ['gmial.com', 'gmail.com', 2, 1],
    ['gmal.com', 'gmail.com', 2, 1],
    ['gnail.con', 'gmail.com', 2, 2],
    ['kitten', 'sitting', 3, 3],
    ['kitten', 'sitting', 2, 3], // past the bound: max + 1
    ['abc', 'abcdef', 1, 2],
    ['', 'ab', 2, 2],
  ];
  for (const [a, b, max, d] of cases) t.equal(editDistance(a, b, max), d, `${a} ~ ${b} (max ${max})`);
});
