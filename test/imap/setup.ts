// Boots the real appliance on port 0 and gives IMAP tests what they need: accounts in the store (on a domain
// inserted directly, as the store tests do), imapflow clients over STARTTLS or implicit TLS, and a raw
// line client for the syntax corners no library sends.
import type { Test } from 'tap';
import { ImapFlow } from 'imapflow';
import { startTestApp, type TestApp, type TestAppOptions } from '../helpers/app.js';
import { SocketClient } from '../helpers/socket-client.js';
import type { MailStore } from '../../src/mailstore/types.js';

export interface ImapFixture {
  app: TestApp;
  store: MailStore;
  imapPort: number;
  imapsPort: number;
  account(local: string, opts?: { quotaBytes?: number; password?: string }): Promise<{ id: number; address: string; password: string }>;
  /** An imapflow client logged in as the account (STARTTLS on the plain port unless `implicit`). */
  client(address: string, password?: string, opts?: { implicit?: boolean; loginMethod?: string }): Promise<ImapFlow>;
  raw(opts?: { implicit?: boolean }): Promise<RawClient>;
}

export const PASSWORD = 'correct horse battery';

export async function setupImap(t: Test, opts: TestAppOptions = {}): Promise<ImapFixture> {
  const app = await startTestApp(t, opts);
  const ctx = app.appliance.ctx;
  const now = new Date().toISOString();
  const domainId = 'dom_imap';
  await ctx.db('domains').insert({ id: domainId, team_id: app.teamId, name: 'example.com', status: 'verified', region: 'eu-west-1', open_tracking: false, click_tracking: false, tls_mode: 'opportunistic', created_at: now, updated_at: now });
  const clients: Array<ImapFlow | RawClient> = [];
  t.teardown(async () => {
    for (const c of clients) {
      if (c instanceof RawClient) c.destroy();
      else c.close();
    }
  });
  return {
    app,
    store: ctx.mailstore,
    imapPort: app.appliance.ports.imap.port,
    imapsPort: app.appliance.ports.imaps.port,
    async account(local, o = {}) {
      const password = o.password ?? PASSWORD;
      const acc = await ctx.mailstore.createAccount({ teamId: app.teamId, domainId, address: `${local}@example.com`, password, ...(o.quotaBytes !== undefined ? { quotaBytes: o.quotaBytes } : {}) });
      return { id: acc.id, address: acc.address, password };
    },
    async client(address, password = PASSWORD, o = {}) {
      const client = new ImapFlow({
        host: '127.0.0.1',
        port: o.implicit ? app.appliance.ports.imaps.port : app.appliance.ports.imap.port,
        secure: Boolean(o.implicit),
        tls: { rejectUnauthorized: false },
        auth: { user: address, pass: password, ...(o.loginMethod ? { loginMethod: o.loginMethod } : {}) },
        logger: false,
        disableAutoIdle: true,
      });
      client.on('error', () => {});
      await client.connect();
      clients.push(client);
      return client;
    },
    async raw(o = {}) {
      const c = await RawClient.connect(o.implicit ? app.appliance.ports.imaps.port : app.appliance.ports.imap.port, Boolean(o.implicit));
      clients.push(c);
      return c;
    },
  };
}

/** A raw client logged in as `user` after STARTTLS on the plain port. */
export async function session(f: ImapFixture, user: string): Promise<RawClient> {
  const c = await f.raw();
  await c.starttls();
  await c.login(user);
  return c;
}

let counter = 0;
/** A small RFC 5322 message. */
export function message(opts: { subject?: string; from?: string; to?: string; body?: string; headers?: string[]; date?: string } = {}): Buffer {
  counter++;
  return Buffer.from(
    [
      `From: ${opts.from ?? 'Alice Example <alice@remote.test>'}`,
      `To: ${opts.to ?? 'bob@example.com'}`,
      `Subject: ${opts.subject ?? 'Hello'}`,
      `Date: ${opts.date ?? 'Fri, 01 May 2026 10:00:00 +0000'}`,
      `Message-ID: <m${counter}.${process.pid}@remote.test>`,
      ...(opts.headers ?? []),
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      opts.body ?? `Body ${counter}`,
      '',
    ].join('\r\n'),
  );
}

/** A line-oriented IMAP client over a raw socket: send exact bytes, read until a tagged response. */
export class RawClient extends SocketClient {
  static async connect(port: number, implicit: boolean): Promise<RawClient> {
    const c = new RawClient(await SocketClient.open(port, implicit));
    await c.waitFor(/^\* OK .*\r\n/m);
    return c;
  }

  send(data: string | Buffer): void {
    this.write(data);
  }

  /** Resolves with all text up to and including the first match; rejects if the connection closes first. */
  waitFor(re: RegExp): Promise<string> {
    return this.until(() => {
      const m = re.exec(this.received);
      return m ? this.consume(m.index + m[0].length) : undefined;
    }, String(re));
  }

  /** Sends `tag command` and returns all responses through the tagged one. */
  async command(tag: string, text: string): Promise<string> {
    this.send(`${tag} ${text}\r\n`);
    return this.waitFor(new RegExp(`^${tag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} (OK|NO|BAD)[^\r\n]*\r\n`, 'm'));
  }

  async starttls(tag = 'S1'): Promise<void> {
    const r = await this.command(tag, 'STARTTLS');
    if (!/ OK /.test(r)) throw new Error(`STARTTLS failed: ${r}`);
    await this.upgradeTls();
  }

  async login(user: string, password = PASSWORD): Promise<void> {
    const r = await this.command('L1', `LOGIN "${user}" "${password}"`);
    if (!/^L1 OK/m.test(r)) throw new Error(`login failed: ${r}`);
  }
}
