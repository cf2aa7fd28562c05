import t from 'tap';
import { LOOPBACK_NETWORKS, NetworkList, parseCidr } from '../../src/core/trusted-networks.js';

t.test('the default list holds loopback, IPv4 (also IPv4-mapped) and IPv6, and nothing else', async (t) => {
  const list = new NetworkList(LOOPBACK_NETWORKS);
  const cases: Array<[string | undefined, boolean]> = [
    ['127.0.0.1', true],
    ['127.255.255.254', true],
    ['::ffff:127.0.0.1', true],
    ['::1', true],
    ['0:0:0:0:0:0:0:1', true],
    ['128.0.0.1', false],
    ['126.255.255.255', false],
    ['::2', false],
    ['::', false],
    ['10.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['', false],
    [undefined, false],
    ['localhost', false],
    ['not an address', false],
  ];
  for (const [ip, expected] of cases) t.equal(list.contains(ip), expected, `${ip} ${expected ? 'is' : 'is not'} trusted`);
});

t.test('prefixes that end inside a byte, bare addresses and IPv6 blocks', async (t) => {
  const list = new NetworkList(['192.0.2.64/27', '198.51.100.7', '2001:db8:1234::/47', 'fe80::1%eth0/128']);
  const cases: Array<[string, boolean]> = [
    ['192.0.2.64', true],
    ['192.0.2.95', true],
    ['192.0.2.96', false],
    ['192.0.2.63', false],
    ['198.51.100.7', true],
    ['198.51.100.8', false],
    ['2001:db8:1234::1', true],
    ['2001:db8:1235:ffff::1', true],
    ['2001:db8:1236::1', false],
    ['fe80::1', true],
    ['fe80::1%eth1', true],
  ];
  for (const [ip, expected] of cases) t.equal(list.contains(ip), expected, `${ip} ${expected ? 'is' : 'is not'} on the list`);
});

t.test('0.0.0.0/0 is every IPv4 client, ::/0 every client', async (t) => {
  t.ok(new NetworkList(['0.0.0.0/0']).contains('203.0.113.9'));
  t.notOk(new NetworkList(['0.0.0.0/0']).contains('2001:db8::1'), 'an IPv4 block holds no IPv6 client');
  t.ok(new NetworkList(['::/0']).contains('2001:db8::1'));
  t.notOk(new NetworkList([]).contains('127.0.0.1'), 'an empty list trusts no one');
});

t.test('parseCidr refuses what is not address/prefix, saying why', async (t) => {
  const bad: Array<[string, RegExp]> = [
    ['10.0.0.0/33', /at most 32/],
    ['::/129', /at most 128/],
    ['10.0.0.0/-1', /bad prefix/],
    ['10.0.0.0/', /bad prefix/],
    ['10.0.0/8', /not an IP address/],
    ['example.com/24', /not an IP address/],
    ['1.2.3.4/8/8', /not address\/prefix/],
  ];
  for (const [text, why] of bad) t.throws(() => parseCidr(text), { message: why }, text);
});
