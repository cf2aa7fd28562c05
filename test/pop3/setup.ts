// Shared set-up of the POP3 tests: an appliance, a team domain, mailboxes with messages delivered through
// the store, and Python (the standard library's poplib) as a second client.
import { execFile } from 'node:child_process';
import type { Test } from 'tap';
import { startTestApp, type TestApp } from '../helpers/app.js';
import type { Config } from '../../src/config.js';

export interface Pop3Fixture {
  app: TestApp;
  domainId: string;
  /** Creates a mailbox `<local>@pop.example` with the password `password-<local>`; returns its id. */
  mailbox(local: string): Promise<number>;
  /** Delivers a message into a mailbox's INBOX. */
  deliver(mailboxId: number, raw: string | Buffer): Promise<void>;
  /** The UIDs in a mailbox's INBOX. */
  inbox(mailboxId: number): Promise<number[]>;
}

export const password = (local: string) => `password-${local}`;

export function message(subject: string, body = 'Hello.\r\n'): string {
  return `From: sender@else.example\r\nTo: someone@pop.example\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@else.example>\r\n\r\n${body}`;
}

/** `config` over the test defaults, e.g. `{ trustedNetworks: [] }` to speak as an untrusted client from loopback. */
export async function pop3Fixture(t: Test, config: Partial<Config> = {}): Promise<Pop3Fixture> {
  const app = await startTestApp(t, { config });
  const created = await app.request<{ id: string }>('POST', '/domains', { body: { name: 'pop.example' } });
  if (created.status !== 201) throw new Error(created.text);
  const store = app.appliance.ctx.mailstore;
  const domainId = created.body.id;
  return {
    app,
    domainId,
    async mailbox(local) {
      const account = await store.createAccount({ teamId: app.teamId, domainId, address: `${local}@pop.example`, password: password(local) });
      return account.id;
    },
    async deliver(mailboxId, raw) {
      await store.deliver(Buffer.isBuffer(raw) ? raw : Buffer.from(raw, 'latin1'), [{ mailboxId }]);
    },
    async inbox(mailboxId) {
      const folder = await store.getFolder(mailboxId, 'INBOX');
      return (await store.listMessages(folder!.id)).map((m) => m.uid);
    },
  };
}

/** Runs a Python 3 script with arguments; resolves with its stdout parsed as JSON. */
export function python<T>(script: string, args: Array<string | number>): Promise<T> {
  return new Promise((resolve, reject) => {
    execFile('python3', ['-c', script, ...args.map(String)], { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`python3 failed: ${err.message}\n${stderr}`));
      try {
        resolve(JSON.parse(stdout) as T);
      } catch {
        reject(new Error(`python3 printed no JSON: ${stdout}\n${stderr}`));
      }
    });
  });
}
