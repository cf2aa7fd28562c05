// Pure helpers behind sending domains: name normalisation, the records to publish, the DKIM tag-list
// parser, the stored-status key, and each record check against an in-memory resolver.
import t from 'tap';
import { normaliseDomainName } from '../../src/services/platform/domains.js';
import {
  checkRecord,
  dkimRecordValue,
  expectedRecords,
  parseTagList,
  recordKey,
  txtStrings,
  zoneFileLine,
  type DnsRecord,
} from '../../src/services/platform/domain-records.js';
import { DnsLookupError, markUnanswered, type DnsResolver, type MxRecord } from '../../src/dns/resolver.js';

t.test('normaliseDomainName', async (t) => {
  const label63 = 'a'.repeat(63);
  const name253 = `${label63}.${label63}.${label63}.${'a'.repeat(61)}`; // 63*3 + 61 + 3 dots = 253
  t.equal(name253.length, 253);
  const cases: Array<[input: string, expected: string | null, why: string]> = [
    ['example.com', 'example.com', 'plain name unchanged'],
    ['Example.COM', 'example.com', 'lower-cased'],
    ['example.com.', 'example.com', 'one trailing dot (FQDN) dropped'],
    ['  example.com  ', 'example.com', 'surrounding whitespace trimmed'],
    ['Sub.Mail.Example.co.uk', 'sub.mail.example.co.uk', 'many labels'],
    ['a.b', 'a.b', 'two one-letter labels'],
    ['123.com', '123.com', 'an all-digit label that is not the TLD'],
    ['1.2.3.com', '1.2.3.com', 'digits, but the TLD is not numeric'],
    ['ab--cd.com', 'ab--cd.com', 'inner double hyphen'],
    ['Bücher.Example.', 'xn--bcher-kva.example', 'IDN: punycode, lower case, no trailing dot'],
    ['bücher.example', 'xn--bcher-kva.example', 'IDN lower case'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example', 'already punycode: unchanged'],
    ['münchen.de', 'xn--mnchen-3ya.de', 'IDN label'],
    ['faß.de', 'xn--fa-hia.de', 'UTS #46 non-transitional: ß kept'],
    ['例え.テスト', 'xn--r8jz45g.xn--zckzah', 'IDN TLD too'],
    ['é.com', 'xn--9ca.com', 'one-letter IDN label'],
    [`${label63}.com`, `${label63}.com`, '63-character label is the maximum'],
    [name253, name253, '253 characters is the maximum length'],
    // refused
    ['', null, 'empty'],
    ['.', null, 'root only'],
    ['   ', null, 'blank'],
    ['example', null, 'single label'],
    ['localhost', null, 'single label'],
    ['a..b', null, 'empty label'],
    ['.example.com', null, 'leading dot'],
    ['example.com..', null, 'two trailing dots'],
    ['192.168.1.1', null, 'IPv4 literal'],
    ['10.0.0.256', null, 'IPv4-looking literal'],
    ['example.123', null, 'numeric TLD'],
    ['[::1]', null, 'IPv6 literal'],
    ['::1', null, 'bare IPv6'],
    ['exa mple.com', null, 'space inside'],
    ['exa\tmple.com', null, 'tab inside'],
    ['http://x.com', null, 'URL'],
    ['x.com/path', null, 'path'],
    ['x.com:25', null, 'port'],
    ['user@x.com', null, 'email address'],
    ['-bad.com', null, 'label starts with a hyphen'],
    ['bad-.com', null, 'label ends with a hyphen'],
    ['a_b.com', null, 'underscore'],
    ['*.example.com', null, 'wildcard'],
    ['ex!ample.com', null, 'punctuation'],
    ['exa%mple.com', null, 'percent'],
    [`${'a'.repeat(64)}.com`, null, '64-character label'],
    [`${name253}a`, null, '254 characters'],
    [`${'ü'.repeat(60)}.com`, null, 'IDN label longer than 63 once in punycode'],
    ['xn--zz.com', null, 'invalid punycode'],
  ];
  for (const [input, expected, why] of cases) t.equal(normaliseDomainName(input), expected, `${JSON.stringify(input)}: ${why}`);

  // IDNA (UTS #46) treats the ideographic full stop as a label separator: accepted inside a name...
  t.equal(normaliseDomainName('example\u3002com'), 'example.com', 'ideographic full stop separates labels');
  t.equal(normaliseDomainName('ＥＸＡＭＰＬＥ.com'), 'example.com', 'full-width letters mapped');
  t.equal(normaliseDomainName('example.com\u3002'), 'example.com', 'an ideographic trailing root dot is dropped too');
});

t.test('parseTagList', async (t) => {
  const cases: Array<[input: string, expected: Array<[string, string]>, why: string]> = [
    ['v=DKIM1; k=rsa; p=ABC', [['v', 'DKIM1'], ['k', 'rsa'], ['p', 'ABC']], 'plain tag list'],
    ['v=DKIM1;k=rsa;p=ABC;', [['v', 'DKIM1'], ['k', 'rsa'], ['p', 'ABC']], 'no spaces, trailing semicolon'],
    ['  v = DKIM1 ;\tp = AB C\r\n DE  ', [['v', 'DKIM1'], ['p', 'ABCDE']], 'whitespace around tags and folded inside values'],
    ['V=DKIM1; P=xYz', [['v', 'DKIM1'], ['p', 'xYz']], 'tag names lower-cased, values keep their case'],
    ['p=MIIBIjAN==', [['p', 'MIIBIjAN==']], 'base64 padding kept: only the first = splits'],
    ['p=', [['p', '']], 'empty value (revoked key)'],
    ['v=DMARC1; p=none; rua=mailto:a@b.example', [['v', 'DMARC1'], ['p', 'none'], ['rua', 'mailto:a@b.example']], 'DMARC record'],
    ['garbage; p=ok; ;', [['p', 'ok']], 'parts without = ignored'],
    ['', [], 'empty'],
  ];
  for (const [input, expected, why] of cases) t.same([...(parseTagList(input) ?? [])], expected, `${JSON.stringify(input)}: ${why}`);
  t.equal(parseTagList('v=DKIM1; p=AAA; p=BBB'), null, 'a repeated tag makes the list invalid (RFC 6376 §3.2)');
  t.equal(parseTagList('p=A; P=B'), null, 'tag names compare case-insensitively');
});

t.test('dkimRecordValue', async (t) => {
  t.equal(dkimRecordValue('MIIBkey'), 'v=DKIM1; k=rsa; p=MIIBkey');
  t.equal(parseTagList(dkimRecordValue('MIIB+/key=='))?.get('p'), 'MIIB+/key==', 'parses back to the same key');
  t.equal(dkimRecordValue('11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=', 'ed25519'), 'v=DKIM1; k=ed25519; p=11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=', 'RFC 8463 §A.2');
});

t.test('expectedRecords', async (t) => {
  t.test('one key: SPF, DKIM, DMARC, MX in that order, all pending', async (t) => {
    const records = expectedRecords('example.com', 'mx.box.test', [{ selector: 's1', publicKey: 'PUBKEY' }]);
    t.same(records, [
      {
        record: 'SPF',
        type: 'TXT',
        name: 'example.com',
        value: 'v=spf1 a:mx.box.test ~all',
        ttl: 'Auto',
        required: true,
        status: 'pending',
        zone_file_line: 'example.com. IN TXT "v=spf1 a:mx.box.test ~all"',
      },
      {
        record: 'DKIM',
        type: 'TXT',
        name: 's1._domainkey.example.com',
        value: 'v=DKIM1; k=rsa; p=PUBKEY',
        ttl: 'Auto',
        required: true,
        status: 'pending',
        zone_file_line: 's1._domainkey.example.com. IN TXT "v=DKIM1; k=rsa; p=PUBKEY"',
        dkim: { selector: 's1', algorithm: 'rsa', state: 'active', retire_after: null },
      },
      {
        record: 'DMARC',
        type: 'TXT',
        name: '_dmarc.example.com',
        value: 'v=DMARC1; p=none; rua=mailto:dmarc-reports@example.com',
        ttl: 'Auto',
        required: false,
        status: 'pending',
        zone_file_line: '_dmarc.example.com. IN TXT "v=DMARC1; p=none; rua=mailto:dmarc-reports@example.com"',
      },
      {
        record: 'MX',
        type: 'MX',
        name: 'example.com',
        value: 'mx.box.test',
        priority: 10,
        ttl: 'Auto',
        required: false,
        status: 'pending',
        zone_file_line: 'example.com. IN MX 10 mx.box.test.',
      },
    ]);
    t.notOk(records.some((r) => 'reason' in r), 'no reason before a check');
  });

  t.test('one DKIM record per published key, in the given order', async (t) => {
    const records = expectedRecords('example.org', 'box.test', [
      { selector: 'old', publicKey: 'A' },
      { selector: 'new', publicKey: 'B' },
    ]);
    t.same(
      records.map((r) => [r.record, r.name, r.value]),
      [
        ['SPF', 'example.org', 'v=spf1 a:box.test ~all'],
        ['DKIM', 'old._domainkey.example.org', 'v=DKIM1; k=rsa; p=A'],
        ['DKIM', 'new._domainkey.example.org', 'v=DKIM1; k=rsa; p=B'],
        ['DMARC', '_dmarc.example.org', 'v=DMARC1; p=none; rua=mailto:dmarc-reports@example.org'],
        ['MX', 'example.org', 'box.test'],
      ],
    );
  });

  t.test('no keys: no DKIM record', async (t) => {
    t.same(
      expectedRecords('example.net', 'box.test', []).map((r) => r.record),
      ['SPF', 'DMARC', 'MX'],
    );
  });

  t.test('the values it asks for pass its own checks', async (t) => {
    const records = expectedRecords('example.net', 'box.test', [{ selector: 's', publicKey: 'KEY' }]);
    const dmarc = records.find((r) => r.record === 'DMARC')!;
    t.equal(parseTagList(dmarc.value)?.get('p'), 'none');
    t.match(records[0]!.value, /^v=spf1\s/);
  });
});

t.test('zone_file_line: what a zone file (BIND, NSD, Knot) takes as it is', async (t) => {
  // BIND refuses a character-string over 255 characters ("syntax error"), and a 2048-bit key's record is
  // about 410: the value a customer copies must come split, each part quoted (RFC 1035 §3.3.14).
  const key = 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA' + 'x'.repeat(340) + 'IDAQAB';
  const [, dkim] = expectedRecords('example.com', 'mx.box.test', [{ selector: 's1', publicKey: key }]);
  t.ok(dkim!.value.length > 255);
  const m = /^s1\._domainkey\.example\.com\. IN TXT ((?:"[^"]*" ?)+)$/.exec(dkim!.zone_file_line);
  t.ok(m, dkim!.zone_file_line);
  const strings = [...m![1]!.matchAll(/"([^"]*)"/g)].map((x) => x[1]!);
  t.ok(strings.length >= 2, 'split into several strings');
  t.ok(strings.every((x) => x.length <= 255), 'each at most 255 characters');
  t.equal(strings.join(''), dkim!.value, 'joined (RFC 6376 §3.6.2.2), they are the value');

  t.equal(txtStrings(''), '""', 'an empty value is one empty string');
  t.equal(txtStrings('a"b\\c'), '"a\\"b\\\\c"', 'quotes and backslashes escaped');
  t.equal(txtStrings('x'.repeat(255)), `"${'x'.repeat(255)}"`, '255 characters: one string');
  t.equal(txtStrings('x'.repeat(256)), `"${'x'.repeat(255)}" "x"`, '256: two');

  const srv = expectedRecords('example.com', 'mx.box.test', [], { imaps: 993, submission: 587, pop3s: 995, submissions: 465 }).filter((r) => r.record === 'SRV');
  t.same(
    srv.map((r) => r.zone_file_line),
    [
      '_imaps._tcp.example.com. IN SRV 0 1 993 mx.box.test.',
      '_submission._tcp.example.com. IN SRV 0 1 587 mx.box.test.',
      '_pop3s._tcp.example.com. IN SRV 0 1 995 mx.box.test.',
      '_submissions._tcp.example.com. IN SRV 0 1 465 mx.box.test.',
    ],
  );
  t.equal(zoneFileLine({ type: 'CNAME', name: 'a.example.com', value: 'b.example.net' }), 'a.example.com. IN CNAME b.example.net.');
});

t.test('recordKey', async (t) => {
  const cases: Array<[Pick<DnsRecord, 'record' | 'name'>, string]> = [
    [{ record: 'SPF', name: 'example.com' }, 'SPF'],
    [{ record: 'DMARC', name: '_dmarc.example.com' }, 'DMARC'],
    [{ record: 'MX', name: 'example.com' }, 'MX'],
    [{ record: 'DKIM', name: 's1._domainkey.example.com' }, 'DKIM:s1._domainkey.example.com'],
    [{ record: 'DKIM', name: 's2._domainkey.example.com' }, 'DKIM:s2._domainkey.example.com'],
  ];
  for (const [record, key] of cases) t.equal(recordKey(record), key, `${record.record} ${record.name}`);
  // Every expected record of a domain gets a distinct key, whatever the hostname.
  const keys = expectedRecords('example.com', 'a.test', [
    { selector: 'x', publicKey: '1' },
    { selector: 'y', publicKey: '2' },
  ]).map(recordKey);
  t.equal(new Set(keys).size, keys.length, 'keys are unique within a domain');
  t.same(
    expectedRecords('example.com', 'other.test', [
      { selector: 'x', publicKey: '1' },
      { selector: 'y', publicKey: '2' },
    ]).map(recordKey),
    keys,
    'keys do not depend on the hostname',
  );
});

// An in-memory resolver with the same contract as src/dns/resolver.ts: "no data" is an empty answer,
// a failed look-up a DnsLookupError; `raw` (used by mailauth) throws ENOTFOUND/ENODATA like node:dns.
interface Zone {
  txt?: Record<string, string[]>;
  mx?: Record<string, MxRecord[]>;
  a?: Record<string, string[]>;
  cname?: Record<string, string>;
  servfail?: string[];
}

function memoryResolver(zone: Zone): DnsResolver & { asked: string[] } {
  const asked: string[] = [];
  const get = <T>(type: string, table: Record<string, T[]> | undefined, name: string): T[] => {
    asked.push(`${type} ${name}`);
    if (zone.servfail?.includes(name)) throw new DnsLookupError(type, name, 'ESERVFAIL');
    return table?.[name] ?? [];
  };
  return {
    asked,
    txt: async (name) => get('TXT', zone.txt, name),
    mx: async (name) => get('MX', zone.mx, name),
    a: async (name) => get('A', zone.a, name),
    aaaa: async (name) => get('AAAA', {}, name),
    raw: async (name, rrtype) => {
      asked.push(`raw ${rrtype} ${name}`);
      if (zone.servfail?.includes(name)) throw markUnanswered(Object.assign(new Error(`query${rrtype} ESERVFAIL ${name}`), { code: 'ESERVFAIL' }), name);
      const cname = zone.cname?.[name];
      const values: unknown[] =
        rrtype === 'TXT'
          ? (zone.txt?.[name] ?? []).map((v) => [v])
          : rrtype === 'A'
            ? (zone.a?.[name] ?? [])
            : rrtype === 'MX'
              ? (zone.mx?.[name] ?? [])
              : rrtype === 'CNAME' && cname
                ? [cname]
                : [];
      if (values.length === 0) throw Object.assign(new Error(`queryX ENODATA ${name}`), { code: 'ENODATA' });
      return values;
    },
  };
}

t.test('checkRecord', async (t) => {
  const HOST = 'mx.box.test';
  const DOMAIN = 'example.com';
  const records = expectedRecords(DOMAIN, HOST, [{ selector: 's1', publicKey: 'MIIBgoodkey+/==' }]);
  const [SPF, DKIM, DMARC, MX] = records as [DnsRecord, DnsRecord, DnsRecord, DnsRecord];
  const boxA = { [HOST]: ['198.51.100.7'] };

  const cases: Array<{ name: string; record: DnsRecord; zone: Zone; status: 'verified' | 'failed'; reason?: RegExp; transient?: true }> = [
    // SPF, evaluated by mailauth from the box's address
    { name: 'SPF a:<host> authorises the box', record: SPF, zone: { a: boxA, txt: { [DOMAIN]: [SPF.value] } }, status: 'verified' },
    {
      name: 'SPF ip4 of the box authorises it too (evaluated, not string-matched)',
      record: SPF,
      zone: { a: boxA, txt: { [DOMAIN]: ['v=spf1 ip4:198.51.100.0/24 -all'] } },
      status: 'verified',
    },
    {
      name: 'SPF next to other TXT records',
      record: SPF,
      zone: { a: boxA, txt: { [DOMAIN]: ['google-site-verification=abc', SPF.value] } },
      status: 'verified',
    },
    {
      name: 'SPF that names other hosts only',
      record: SPF,
      zone: { a: boxA, txt: { [DOMAIN]: ['v=spf1 ip4:192.0.2.1 -all'] } },
      status: 'failed',
      reason: /does not authorise mx\.box\.test \(198\.51\.100\.7: fail\)/,
    },
    { name: 'no SPF record', record: SPF, zone: { a: boxA, txt: { [DOMAIN]: ['unrelated'] } }, status: 'failed', reason: /^No SPF record \(v=spf1\) found at example\.com$/ },
    {
      name: 'two SPF records',
      record: SPF,
      zone: { a: boxA, txt: { [DOMAIN]: [SPF.value, 'v=spf1 -all'] } },
      status: 'failed',
      reason: /^2 SPF records found at example\.com; there must be exactly one/,
    },
    {
      name: 'box name does not resolve: the record is read instead (names the box)',
      record: SPF,
      zone: { txt: { [DOMAIN]: [`v=spf1 +a:${HOST} -all`] } },
      status: 'verified',
    },
    {
      name: 'box name does not resolve and the record does not name it',
      record: SPF,
      zone: { txt: { [DOMAIN]: ['v=spf1 a:elsewhere.test -all'] } },
      status: 'failed',
      reason: /does not name mx\.box\.test/,
    },
    {
      name: 'SERVFAIL on the SPF look-up',
      record: SPF,
      zone: { servfail: [DOMAIN] },
      status: 'failed',
      reason: /^DNS TXT look-up for example\.com failed \(ESERVFAIL\); try again later$/,
      transient: true,
    },
    // Regression (found against BIND + Unbound): mailauth skipped an include: answered SERVFAIL and went on
    // (RFC 7208 §5.2 makes it a temperror), and a temperror was reported as "does not authorise …; add a:".
    {
      name: 'SPF whose include: is answered SERVFAIL: a DNS failure, not an SPF verdict',
      record: SPF,
      zone: { a: boxA, txt: { [DOMAIN]: [`v=spf1 include:_spf.provider.test a:${HOST} ~all`] }, servfail: ['_spf.provider.test'] },
      status: 'failed',
      reason: /^DNS TXT look-up for _spf\.provider\.test failed \(ESERVFAIL\); try again later$/,
      transient: true,
    },
    {
      name: "SERVFAIL on the box's own address",
      record: SPF,
      zone: { txt: { [DOMAIN]: [SPF.value] }, servfail: [HOST] },
      status: 'failed',
      reason: /^DNS A look-up for mx\.box\.test failed \(ESERVFAIL\)/,
      transient: true,
    },
    {
      name: 'SPF with a syntax error: permerror, said as such',
      record: SPF,
      zone: { a: boxA, txt: { [DOMAIN]: [`v=spf1 a:${HOST} ~al`] } },
      status: 'failed',
      reason: /^The SPF record at example\.com is invalid \(permerror: Unknown mechanism al\)/,
    },
    // Regression: receivers read a record only when it begins exactly with v=spf1 (RFC 7208 §4.5); the check
    // trimmed it first and passed a record strict receivers ignore.
    {
      name: 'SPF with a leading blank',
      record: SPF,
      zone: { a: boxA, txt: { [DOMAIN]: [` ${SPF.value}`] } },
      status: 'failed',
      reason: /starts with a blank .*remove the leading space/,
    },
    { name: 'SPF with a trailing blank is fine', record: SPF, zone: { a: boxA, txt: { [DOMAIN]: [`${SPF.value} `] } }, status: 'verified' },
    {
      name: 'SPF pasted with its quotation marks',
      record: SPF,
      zone: { a: boxA, txt: { [DOMAIN]: [`"${SPF.value}"`] } },
      status: 'failed',
      reason: /has quotation marks inside its value .*without the quotes/,
    },
    {
      name: 'a second SPF record with a leading blank counts (receivers that trim see two)',
      record: SPF,
      zone: { a: boxA, txt: { [DOMAIN]: [SPF.value, ' v=spf1 -all'] } },
      status: 'failed',
      reason: /^2 SPF records found/,
    },
    // Regression: a name entered in full at a DNS host that appends the zone (or without its trailing dot
    // in a zone file) lands at <name>.<domain>; the reason only said "not found".
    {
      name: 'SPF at the doubled name',
      record: SPF,
      zone: { a: boxA, txt: { [`${DOMAIN}.${DOMAIN}`]: [SPF.value] } },
      status: 'failed',
      reason: /^No SPF record \(v=spf1\) found at example\.com; one was found at example\.com\.example\.com: .*Enter the name as @, or in full with a trailing dot \(example\.com\.\)$/,
    },
    // DKIM
    { name: 'DKIM exactly as asked', record: DKIM, zone: { txt: { [DKIM.name]: [DKIM.value] } }, status: 'verified' },
    {
      name: 'DKIM with folded whitespace in p= and no v= tag',
      record: DKIM,
      zone: { txt: { [DKIM.name]: ['k=rsa;  p=MIIB good key\t+/=='] } },
      status: 'verified',
    },
    { name: 'DKIM with another key', record: DKIM, zone: { txt: { [DKIM.name]: ['v=DKIM1; k=rsa; p=MIIBotherkey'] } }, status: 'failed', reason: /does not carry this domain's public key/ },
    { name: 'DKIM with a revoked (empty) key', record: DKIM, zone: { txt: { [DKIM.name]: ['v=DKIM1; p='] } }, status: 'failed', reason: /does not carry/ },
    { name: 'DKIM with a wrong version', record: DKIM, zone: { txt: { [DKIM.name]: ['v=DKIM2; p=MIIBgoodkey+/=='] } }, status: 'failed', reason: /does not carry/ },
    {
      name: 'DKIM with another key: the message says what was found, its key shortened',
      record: DKIM,
      zone: { txt: { [DKIM.name]: [`v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOC${'Q'.repeat(300)}IDAQAB`] } },
      status: 'failed',
      reason: /^The DKIM record at s1\._domainkey\.example\.com does not carry this domain's public key \(found: "v=DKIM1; k=rsa; p=MIIBIjANBg…QQQQIDAQAB"\)$/,
    },
    {
      name: 'DKIM with this key under another k=',
      record: DKIM,
      zone: { txt: { [DKIM.name]: ['v=DKIM1; k=ed25519; p=MIIBgoodkey+/=='] } },
      status: 'failed',
      reason: /has this domain's public key with k=ed25519 .*it must say k=rsa$/,
    },
    { name: 'no DKIM record', record: DKIM, zone: {}, status: 'failed', reason: /^No DKIM record found at s1\._domainkey\.example\.com$/ },
    { name: 'SERVFAIL on the DKIM look-up', record: DKIM, zone: { servfail: [DKIM.name] }, status: 'failed', reason: /ESERVFAIL/, transient: true },
    {
      name: 'DKIM at the doubled name',
      record: DKIM,
      zone: { txt: { [`${DKIM.name}.${DOMAIN}`]: [DKIM.value] } },
      status: 'failed',
      reason: /one was found at s1\._domainkey\.example\.com\.example\.com: .*Enter the name as s1\._domainkey, or in full with a trailing dot \(s1\._domainkey\.example\.com\.\)$/,
    },
    {
      name: 'DKIM name is a CNAME to a name without the record',
      record: DKIM,
      zone: { cname: { [DKIM.name]: 's1.dkim.provider.test.' } },
      status: 'failed',
      reason: /^No DKIM record found at s1\._domainkey\.example\.com; s1\._domainkey\.example\.com is a CNAME to s1\.dkim\.provider\.test, which has no such TXT record$/,
    },
    // Regression: a verifier reads one TXT record at a selector (mailauth the first); the check passed when
    // any one of several carried the key.
    {
      name: 'DKIM: this key and a stale one at the same name',
      record: DKIM,
      zone: { txt: { [DKIM.name]: ['v=DKIM1; k=rsa; p=MIIBstalekey', DKIM.value] } },
      status: 'failed',
      reason: /^2 TXT records found at s1\._domainkey\.example\.com, one with this domain's key: a verifier reads only one/,
    },
    {
      name: 'DKIM pasted with its quotation marks',
      record: DKIM,
      zone: { txt: { [DKIM.name]: [`"${DKIM.value}"`] } },
      status: 'failed',
      reason: /has quotation marks inside its value/,
    },
    // DMARC
    { name: 'DMARC as asked', record: DMARC, zone: { txt: { [DMARC.name]: [DMARC.value] } }, status: 'verified' },
    { name: 'DMARC p=reject, other tags', record: DMARC, zone: { txt: { [DMARC.name]: ['v=DMARC1;p=Reject;pct=100'] } }, status: 'verified' },
    { name: 'DMARC with an invalid policy', record: DMARC, zone: { txt: { [DMARC.name]: ['v=DMARC1; p=maybe'] } }, status: 'failed', reason: /no valid p= policy/ },
    { name: 'DMARC without a policy', record: DMARC, zone: { txt: { [DMARC.name]: ['v=DMARC1; rua=mailto:x@y.z'] } }, status: 'failed', reason: /no valid p= policy/ },
    { name: 'two DMARC records', record: DMARC, zone: { txt: { [DMARC.name]: ['v=DMARC1; p=none', 'v=DMARC1; p=reject'] } }, status: 'failed', reason: /^2 DMARC records/ },
    { name: 'no DMARC record', record: DMARC, zone: { txt: { [DMARC.name]: ['v=spf1 -all'] } }, status: 'failed', reason: /^No DMARC record/ },
    {
      name: 'DMARC at the doubled name',
      record: DMARC,
      zone: { txt: { [`${DMARC.name}.${DOMAIN}`]: [DMARC.value] } },
      status: 'failed',
      reason: /one was found at _dmarc\.example\.com\.example\.com: .*Enter the name as _dmarc,/,
    },
    {
      name: 'DMARC pasted with its quotation marks',
      record: DMARC,
      zone: { txt: { [DMARC.name]: [`"${DMARC.value}"`] } },
      status: 'failed',
      reason: /has quotation marks inside its value/,
    },
    // MX
    { name: 'MX at the box', record: MX, zone: { mx: { [DOMAIN]: [{ exchange: HOST, priority: 10 }] } }, status: 'verified' },
    {
      name: 'MX at the box among others',
      record: MX,
      zone: { mx: { [DOMAIN]: [{ exchange: 'backup.example.com', priority: 5 }, { exchange: HOST, priority: 20 }] } },
      status: 'verified',
    },
    {
      name: 'MX elsewhere',
      record: MX,
      zone: { mx: { [DOMAIN]: [{ exchange: 'mx.other.test', priority: 10 }] } },
      status: 'failed',
      reason: /^The MX records of example\.com do not point at mx\.box\.test \(found: 10 mx\.other\.test\)$/,
    },
    // Regression: an MX target written without its trailing dot in a zone file gets the zone appended.
    {
      name: 'MX target without its trailing dot',
      record: MX,
      zone: { mx: { [DOMAIN]: [{ exchange: `${HOST}.${DOMAIN}`, priority: 10 }] } },
      status: 'failed',
      reason: /\(found: 10 mx\.box\.test\.example\.com\): .*without its trailing dot.*enter mx\.box\.test\. \(with the dot\)$/,
    },
    { name: 'no MX', record: MX, zone: {}, status: 'failed', reason: /^No MX record found at example\.com$/ },
    {
      name: 'MX at the doubled name',
      record: MX,
      zone: { mx: { [`${DOMAIN}.${DOMAIN}`]: [{ exchange: HOST, priority: 10 }] } },
      status: 'failed',
      reason: /^No MX record found at example\.com; one was found at example\.com\.example\.com/,
    },
  ];

  for (const c of cases) {
    const dns = memoryResolver(c.zone);
    const result = await checkRecord(dns, DOMAIN, HOST, c.record);
    t.equal(result.status, c.status, `${c.name}: status`);
    if (c.reason) t.match(result.reason, c.reason, `${c.name}: reason`);
    else t.notOk(result.reason, `${c.name}: no reason`);
    t.equal(result.transient === true, c.transient === true, `${c.name}: ${c.transient ? 'transient' : 'an answer, not a DNS failure'}`);
  }

  t.test('a resolver that throws something unexpected is a failed check, not an exception', async (t) => {
    const dns = memoryResolver({});
    dns.txt = async () => {
      throw new Error('socket hang up');
    };
    t.same(await checkRecord(dns, DOMAIN, HOST, SPF), { status: 'failed', reason: 'Check failed: socket hang up' });
  });
});
