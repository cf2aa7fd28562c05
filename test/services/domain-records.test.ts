// Pure helpers behind sending domains: name normalisation, the records to publish, the DKIM tag-list
// parser, the stored-status key, and each record check against an in-memory resolver.
import t from 'tap';
import { normaliseDomainName } from '../../src/services/domains.js';
import {
  checkRecord,
  dkimRecordValue,
  expectedRecords,
  parseTagList,
  recordKey,
  type DnsRecord,
} from '../../src/services/domain-records.js';
import { DnsLookupError, type DnsResolver, type MxRecord } from '../../src/dns/resolver.js';

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
});

t.test('expectedRecords', async (t) => {
  t.test('one key: SPF, DKIM, DMARC, MX in that order, all pending', async (t) => {
    const records = expectedRecords('example.com', 'mx.box.test', [{ selector: 's1', publicKey: 'PUBKEY' }]);
    t.same(records, [
      { record: 'SPF', type: 'TXT', name: 'example.com', value: 'v=spf1 a:mx.box.test ~all', ttl: 'Auto', required: true, status: 'pending' },
      { record: 'DKIM', type: 'TXT', name: 's1._domainkey.example.com', value: 'v=DKIM1; k=rsa; p=PUBKEY', ttl: 'Auto', required: true, status: 'pending' },
      {
        record: 'DMARC',
        type: 'TXT',
        name: '_dmarc.example.com',
        value: 'v=DMARC1; p=none; rua=mailto:dmarc-reports@example.com',
        ttl: 'Auto',
        required: false,
        status: 'pending',
      },
      { record: 'MX', type: 'MX', name: 'example.com', value: 'mx.box.test', priority: 10, ttl: 'Auto', required: false, status: 'pending' },
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
      const values: unknown[] =
        rrtype === 'TXT' ? (zone.txt?.[name] ?? []).map((v) => [v]) : rrtype === 'A' ? (zone.a?.[name] ?? []) : rrtype === 'MX' ? (zone.mx?.[name] ?? []) : [];
      asked.push(`raw ${rrtype} ${name}`);
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

  const cases: Array<{ name: string; record: DnsRecord; zone: Zone; status: 'verified' | 'failed'; reason?: RegExp }> = [
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
    { name: 'SERVFAIL on the SPF look-up', record: SPF, zone: { servfail: [DOMAIN] }, status: 'failed', reason: /^DNS TXT look-up for example\.com failed \(ESERVFAIL\); try again later$/ },
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
    { name: 'no DKIM record', record: DKIM, zone: {}, status: 'failed', reason: /^No DKIM record found at s1\._domainkey\.example\.com$/ },
    { name: 'SERVFAIL on the DKIM look-up', record: DKIM, zone: { servfail: [DKIM.name] }, status: 'failed', reason: /ESERVFAIL/ },
    // DMARC
    { name: 'DMARC as asked', record: DMARC, zone: { txt: { [DMARC.name]: [DMARC.value] } }, status: 'verified' },
    { name: 'DMARC p=reject, other tags', record: DMARC, zone: { txt: { [DMARC.name]: ['v=DMARC1;p=Reject;pct=100'] } }, status: 'verified' },
    { name: 'DMARC with an invalid policy', record: DMARC, zone: { txt: { [DMARC.name]: ['v=DMARC1; p=maybe'] } }, status: 'failed', reason: /no valid p= policy/ },
    { name: 'DMARC without a policy', record: DMARC, zone: { txt: { [DMARC.name]: ['v=DMARC1; rua=mailto:x@y.z'] } }, status: 'failed', reason: /no valid p= policy/ },
    { name: 'two DMARC records', record: DMARC, zone: { txt: { [DMARC.name]: ['v=DMARC1; p=none', 'v=DMARC1; p=reject'] } }, status: 'failed', reason: /^2 DMARC records/ },
    { name: 'no DMARC record', record: DMARC, zone: { txt: { [DMARC.name]: ['v=spf1 -all'] } }, status: 'failed', reason: /^No DMARC record/ },
    // MX
    { name: 'MX at the box', record: MX, zone: { mx: { [DOMAIN]: [{ exchange: HOST, priority: 10 }] } }, status: 'verified' },
    {
      name: 'MX at the box among others',
      record: MX,
      zone: { mx: { [DOMAIN]: [{ exchange: 'backup.example.com', priority: 5 }, { exchange: HOST, priority: 20 }] } },
      status: 'verified',
    },
    { name: 'MX elsewhere', record: MX, zone: { mx: { [DOMAIN]: [{ exchange: 'mx.other.test', priority: 10 }] } }, status: 'failed', reason: /do not point at mx\.box\.test/ },
    { name: 'no MX', record: MX, zone: {}, status: 'failed', reason: /^No MX record found at example\.com$/ },
  ];

  for (const c of cases) {
    const dns = memoryResolver(c.zone);
    const result = await checkRecord(dns, DOMAIN, HOST, c.record);
    t.equal(result.status, c.status, `${c.name}: status`);
    if (c.reason) t.match(result.reason, c.reason, `${c.name}: reason`);
    else t.notOk(result.reason, `${c.name}: no reason`);
  }

  t.test('a resolver that throws something unexpected is a failed check, not an exception', async (t) => {
    const dns = memoryResolver({});
    dns.txt = async () => {
      throw new Error('socket hang up');
    };
    t.same(await checkRecord(dns, DOMAIN, HOST, SPF), { status: 'failed', reason: 'Check failed: socket hang up' });
  });
});
