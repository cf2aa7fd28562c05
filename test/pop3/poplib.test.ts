// POP3 with Python's poplib (the standard library) as the client: STLS on the plain port, implicit TLS on
// the other, USER/PASS, STAT/LIST/UIDL/RETR/TOP/DELE/QUIT, deletions applied at QUIT through the store.
import t from 'tap';
import { message, password, pop3Fixture, python } from './setup.js';

const SESSION = `
import json, poplib, ssl, sys
host, port, mode, user, pw = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
out = {}
if mode == 'stls':
    p = poplib.POP3(host, port, timeout=20)
    out['capa_plain'] = sorted(p.capa().keys())
    out['stls'] = p.stls(context=ctx).decode()
else:
    p = poplib.POP3_SSL(host, port, context=ctx, timeout=20)
out['capa'] = sorted(p.capa().keys())
out['user'] = p.user(user).decode()
out['pass'] = p.pass_(pw).decode()
out['stat'] = list(p.stat())
resp, lines, _ = p.list()
out['list'] = [l.decode() for l in lines]
resp, lines, _ = p.uidl()
out['uidl'] = [l.decode() for l in lines]
resp, lines, _ = p.retr(1)
out['retr1'] = [l.decode('latin1') for l in lines]
resp, lines, _ = p.top(2, 0)
out['top2'] = [l.decode('latin1') for l in lines]
out['dele'] = p.dele(1).decode()
out['quit'] = p.quit().decode()
print(json.dumps(out))
`;

interface Session {
  capa_plain?: string[];
  stls?: string;
  capa: string[];
  user: string;
  pass: string;
  stat: [number, number];
  list: string[];
  uidl: string[];
  retr1: string[];
  top2: string[];
  dele: string;
  quit: string;
}

t.test('poplib: STLS on the plain port and implicit TLS', async (t) => {
  const f = await pop3Fixture(t, { trustedNetworks: [] }); // an untrusted client (loopback is trusted by default)
  const { ports } = f.app.appliance;
  const alice = await f.mailbox('alice');
  await f.deliver(alice, message('First', 'Line one.\r\n.starts with a dot\r\n'));
  await f.deliver(alice, message('Second', 'Body line 1\r\nBody line 2\r\n'));
  await f.deliver(alice, message('Third'));
  const folder = await f.app.appliance.ctx.mailstore.getFolder(alice, 'INBOX');
  const uids = await f.inbox(alice);

  t.test('plain port: STLS, then USER/PASS and the transaction commands', async (t) => {
    const out = await python<Session>(SESSION, ['127.0.0.1', ports.pop3.port, 'stls', 'alice@pop.example', password('alice')]);
    t.ok(out.capa_plain!.includes('STLS'), 'STLS offered before TLS');
    t.notOk(out.capa_plain!.includes('USER'), 'no plaintext login offered before TLS');
    t.match(out.stls, /^\+OK/);
    t.ok(out.capa.includes('USER') && out.capa.includes('SASL') && out.capa.includes('UIDL') && out.capa.includes('TOP'), out.capa.join(' '));
    t.notOk(out.capa.includes('STLS'), 'no STLS once encrypted');
    t.match(out.pass, /^\+OK Logged in: 3 messages/);
    t.equal(out.stat[0], 3);
    t.equal(out.list.length, 3);
    t.match(out.list[0], /^1 \d+$/);
    t.same(out.uidl, uids.map((uid, i) => `${i + 1} ${folder!.uidValidity}.${uid}`), 'UIDL is <uidvalidity>.<uid>');
    t.ok(out.retr1.includes('Subject: First'));
    t.ok(out.retr1.includes('.starts with a dot'), 'poplib un-stuffs the dot-stuffed line');
    t.ok(out.top2.includes('Subject: Second'));
    t.notOk(out.top2.includes('Body line 1'), 'TOP 2 0: header only');
    t.equal(out.top2[out.top2.length - 1], '', 'TOP ends with the empty line after the header');
    t.match(out.dele, /^\+OK/);
    t.match(out.quit, /^\+OK Bye: 1 messages deleted/);
    t.same(await f.inbox(alice), uids.slice(1), 'QUIT expunged the deleted message through the store');
  });

  t.test('implicit TLS port', async (t) => {
    const out = await python<Session>(SESSION, ['127.0.0.1', ports.pop3s.port, 'ssl', 'alice@pop.example', password('alice')]);
    t.match(out.pass, /^\+OK Logged in: 2 messages/);
    t.ok(out.retr1.includes('Subject: Second'));
    t.same(out.uidl, uids.slice(1).map((uid, i) => `${i + 1} ${folder!.uidValidity}.${uid}`), 'the UIDLs did not change between sessions');
    t.same(await f.inbox(alice), uids.slice(2));
  });

  t.test('wrong password: poplib raises, nothing locked', async (t) => {
    const script = `
import json, poplib, ssl, sys
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
p = poplib.POP3_SSL('127.0.0.1', int(sys.argv[1]), context=ctx, timeout=20)
p.user('alice@pop.example')
try:
    p.pass_('wrong')
    print(json.dumps({'error': None}))
except poplib.error_proto as e:
    print(json.dumps({'error': e.args[0].decode()}))
`;
    const out = await python<{ error: string | null }>(script, [ports.pop3s.port]);
    t.equal(out.error, '-ERR [AUTH] Invalid username or password');
    t.notOk(f.app.appliance.loginGuards.loginBlocked('127.0.0.1', 'alice@pop.example'), 'one failure does not block');
  });
});
