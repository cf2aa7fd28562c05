// MAIL_TRUSTED_NETWORKS and logins without TLS (issue 37 §4), with real clients: Python's imaplib, poplib and
// smtplib in clear, curl imap:// and pop3://, and raw sockets. The box trusts only 127.0.0.1/32; the same
// clients from 127.0.0.2 (still loopback, not trusted) are refused exactly as before.
import { execFile } from 'node:child_process';
import net from 'node:net';
import t from 'tap';
import { ALICE, submissionFixture } from '../submission/setup.js';

const TRUSTED = '127.0.0.1';
const UNTRUSTED = '127.0.0.2';

function run(cmd: string, args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { timeout: 20_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
      resolve({ code, stdout, stderr });
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

// One Python script, three clients, all without TLS, bound to the given source address.
const PYTHON = `
import imaplib, poplib, smtplib, socket, sys, json
src, imap_port, pop_port, sub_port, user, password = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
class IMAP(imaplib.IMAP4):
    def _create_socket(self, timeout):
        return socket.create_connection((self.host, self.port), timeout, source_address=(src, 0))
class POP(poplib.POP3):
    def _create_socket(self, timeout):
        return socket.create_connection((self.host, self.port), timeout, source_address=(src, 0))
out = {}
m = IMAP('127.0.0.1', imap_port)
out['imap_caps'] = sorted(m.capabilities)
try:
    out['imap_login'] = m.login(user, password)[0]
    out['imap_select'] = m.select('INBOX')[0]
    m.logout()
except Exception as e:
    out['imap_login'] = 'refused: ' + str(e)
try:
    m = IMAP('127.0.0.1', imap_port)
    out['imap_plain'] = m.authenticate('PLAIN', lambda _: ('\\0' + user + '\\0' + password).encode())[0]
    m.logout()
except Exception as e:
    out['imap_plain'] = 'refused: ' + str(e)
p = POP('127.0.0.1', pop_port)
out['pop_capa'] = sorted(p.capa().keys())
try:
    p.user(user)
    p.pass_(password)
    out['pop_login'] = 'OK'
    out['pop_stat'] = list(p.stat())
    p.quit()
except Exception as e:
    out['pop_login'] = 'refused: ' + str(e)
s = smtplib.SMTP('127.0.0.1', sub_port, source_address=(src, 0))
s.ehlo('client.example')
out['smtp_auth'] = s.esmtp_features.get('auth', None)
try:
    s.login(user, password)
    out['smtp_login'] = 'OK'
    s.sendmail(user, ['someone@dest.example'], 'From: ' + user + '\\r\\nTo: someone@dest.example\\r\\nSubject: from ' + src + '\\r\\n\\r\\nhello\\r\\n')
    out['smtp_send'] = 'OK'
except Exception as e:
    out['smtp_login'] = 'refused: ' + str(e)
s.close()
print(json.dumps(out))
`;

/** Sends one line from `src` and returns what the server answers up to `until`. */
function exchange(port: number, src: string, lines: string[], until: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress: src });
    let text = '';
    let sent = 0;
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      text += d;
      if (until.test(text)) {
        socket.destroy();
        resolve(text);
      } else if (sent < lines.length && /\r\n$/.test(text)) socket.write(lines[sent++] + '\r\n');
    });
    socket.on('error', reject);
    setTimeout(() => {
      socket.destroy();
      reject(new Error(`timeout; got ${JSON.stringify(text)}`));
    }, 10_000).unref();
  });
}

t.test('trusted 127.0.0.1 logs in without TLS, 127.0.0.2 is refused', async (t) => {
  const f = await submissionFixture(t, { trustedNetworks: [`${TRUSTED}/32`] });
  const { ports } = f.app.appliance;
  const args = (src: string) => ['-c', PYTHON, src, String(ports.imap.port), String(ports.pop3.port), String(ports.submission.port), ALICE.user, ALICE.pass];

  await t.test('Python imaplib, poplib, smtplib in clear', async (t) => {
    const trusted = await run('python3', args(TRUSTED));
    t.equal(trusted.code, 0, trusted.stderr);
    const a = JSON.parse(trusted.stdout) as Record<string, unknown>;
    t.ok((a.imap_caps as string[]).includes('AUTH=PLAIN'), 'IMAP offers AUTH=PLAIN');
    t.notOk((a.imap_caps as string[]).includes('LOGINDISABLED'), 'no LOGINDISABLED');
    t.ok((a.imap_caps as string[]).includes('STARTTLS'), 'STARTTLS still offered');
    t.equal(a.imap_login, 'OK');
    t.equal(a.imap_select, 'OK');
    t.equal(a.imap_plain, 'OK');
    t.ok((a.pop_capa as string[]).includes('USER'), 'POP3 CAPA lists USER');
    t.ok((a.pop_capa as string[]).includes('STLS'), 'and STLS');
    t.equal(a.pop_login, 'OK');
    t.same(a.pop_stat, [0, 0]);
    t.match(a.smtp_auth, /PLAIN/, 'submission EHLO offers AUTH');
    t.equal(a.smtp_login, 'OK');
    t.equal(a.smtp_send, 'OK');

    const untrusted = await run('python3', args(UNTRUSTED));
    t.equal(untrusted.code, 0, untrusted.stderr);
    const b = JSON.parse(untrusted.stdout) as Record<string, unknown>;
    t.ok((b.imap_caps as string[]).includes('LOGINDISABLED'));
    t.notOk((b.imap_caps as string[]).includes('AUTH=PLAIN'));
    t.match(b.imap_login, /^refused: .*PRIVACYREQUIRED/);
    t.match(b.imap_plain, /^refused: .*PRIVACYREQUIRED/);
    t.notOk((b.pop_capa as string[]).includes('USER'));
    t.match(b.pop_login, /^refused: .*STLS|refused: .*TLS/i);
    t.equal(b.smtp_auth, null, 'no AUTH in EHLO before STARTTLS');
    t.match(b.smtp_login, /^refused/);
  });

  await t.test('curl imap:// and pop3://', async (t) => {
    const imapOk = await run('curl', ['-sS', '--interface', TRUSTED, `imap://127.0.0.1:${ports.imap.port}/`, '-u', `${ALICE.user}:${ALICE.pass}`]);
    t.equal(imapOk.code, 0, imapOk.stderr);
    t.match(imapOk.stdout, /LIST .*INBOX/, 'mailboxes listed');
    const popOk = await run('curl', ['-sS', '--interface', TRUSTED, `pop3://127.0.0.1:${ports.pop3.port}/`, '-u', `${ALICE.user}:${ALICE.pass}`]);
    t.equal(popOk.code, 0, popOk.stderr);
    const imapNo = await run('curl', ['-sS', '--interface', UNTRUSTED, `imap://127.0.0.1:${ports.imap.port}/`, '-u', `${ALICE.user}:${ALICE.pass}`]);
    t.not(imapNo.code, 0, 'curl imap from 127.0.0.2 fails at login');
    const popNo = await run('curl', ['-sS', '--interface', UNTRUSTED, `pop3://127.0.0.1:${ports.pop3.port}/`, '-u', `${ALICE.user}:${ALICE.pass}`]);
    t.not(popNo.code, 0, 'curl pop3 from 127.0.0.2 fails at login');
  });

  await t.test('socket level', async (t) => {
    const imapT = await exchange(ports.imap.port, TRUSTED, ['a1 CAPABILITY', `a2 LOGIN ${ALICE.user} ${ALICE.pass}`], /^a2 /m);
    t.match(imapT, /\* CAPABILITY .*STARTTLS AUTH=PLAIN/);
    t.match(imapT, /^a2 OK /m);
    const imapU = await exchange(ports.imap.port, UNTRUSTED, ['a1 CAPABILITY', `a2 LOGIN ${ALICE.user} ${ALICE.pass}`], /^a2 /m);
    t.match(imapU, /\* CAPABILITY .*STARTTLS LOGINDISABLED/);
    t.match(imapU, /^a2 NO \[PRIVACYREQUIRED\]/m);
    const plain = Buffer.from(`\0${ALICE.user}\0${ALICE.pass}`).toString('base64');
    const popT = await exchange(ports.pop3.port, TRUSTED, ['CAPA', `AUTH PLAIN ${plain}`], /\.\r\n[\s\S]*(\+OK|-ERR)[^\r]*\r\n$/);
    t.match(popT, /\r\nUSER\r\n/);
    t.match(popT, /\r\nSASL PLAIN\r\n/);
    t.match(popT, /\+OK[^\r]*\r\n$/, 'AUTH PLAIN accepted');
    const popU = await exchange(ports.pop3.port, UNTRUSTED, ['CAPA', `USER ${ALICE.user}`], /\.\r\n[\s\S]*(\+OK|-ERR)[^\r]*\r\n$/);
    t.notMatch(popU, /\r\nUSER\r\n/);
    t.match(popU, /-ERR[^\r]*\r\n$/, 'USER refused before STLS');
    const subT = await exchange(ports.submission.port, TRUSTED, ['EHLO client.example', `AUTH PLAIN ${plain}`], /^235 /m);
    t.match(subT, /^250-AUTH PLAIN LOGIN/m);
    const subU = await exchange(ports.submission.port, UNTRUSTED, ['EHLO client.example', `AUTH PLAIN ${plain}`], /^538 /m);
    t.notMatch(subU, /AUTH PLAIN/);
  });
});
