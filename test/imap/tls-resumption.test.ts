// TLS session resumption on every mail listener: a client that reconnects with the session (TLS 1.3 ticket) it
// was given does not pay a full handshake. Python's ssl (default client context) and Node's tls, over implicit
// TLS (IMAPS, POP3S, submissions) and STARTTLS (IMAP, POP3 STLS, submission).
import t from 'tap';
import { execFile } from 'node:child_process';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { startTestApp } from '../helpers/app.js';

const script = fileURLToPath(new URL('./fixtures/tls_resume.py', import.meta.url));

t.test('a reconnecting client resumes its TLS session on every listener', async (t) => {
  const app = await startTestApp(t);
  const p = app.appliance.ports;
  const specs = {
    imaps: `imaps:${p.imaps.port}`,
    imap_starttls: `imap:${p.imap.port}`,
    pop3s: `pop3s:${p.pop3s.port}`,
    pop3_stls: `pop3:${p.pop3.port}`,
    submissions: `smtps:${p.submissions.port}`,
    submission_starttls: `smtp:${p.submission.port}`,
  };
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile('python3', [script, '127.0.0.1', ...Object.entries(specs).map(([k, v]) => `${k}=${v}`)], { timeout: 60_000 }, (err, out, errOut) =>
      err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out),
    ),
  );
  const py = JSON.parse(stdout) as Record<string, [boolean, boolean, string]>;
  for (const name of Object.keys(specs)) t.same(py[name], [false, true, 'TLSv1.3'], `python ssl: ${name} resumed`);

  // Node's tls: implicit TLS listeners, the second connection with the first's session.
  for (const [name, port] of [['imaps', p.imaps.port], ['pop3s', p.pop3s.port], ['submissions', p.submissions.port]] as const) {
    let session: Buffer | undefined;
    const reused: boolean[] = [];
    for (let i = 0; i < 2; i++) {
      await new Promise<void>((resolve, reject) => {
        const s = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false, ...(session ? { session } : {}) });
        s.on('session', (sess: Buffer) => (session = sess));
        s.once('data', () => {
          reused.push(s.isSessionReused());
          // The ticket may follow the greeting in the same flight: give it a turn before closing.
          setImmediate(() => s.end());
        });
        s.once('close', () => resolve());
        s.once('error', reject);
      });
    }
    t.same(reused, [false, true], `node tls: ${name} resumed`);
  }
});
