// One POP3 session as an explicit state machine (RFC 1939 §3): AUTHORIZATION → TRANSACTION → UPDATE.
// Commands arrive parsed (protocol.ts); each handler answers with bytes and, at most, one instruction for
// the connection (start TLS, close). The mailbox is the account's INBOX as it was at login (a snapshot:
// message numbers and sizes do not move during the session); deletions are marks until QUIT, which
// expunges them through the store. No socket here: the server (server.ts) feeds lines and writes answers.
import type { MailboxAccount, MailStore } from '../mailstore/types.js';
import type { SmtpGuards } from '../limits/smtp-guards.js';
import { addressKey } from '../core/address.js';
import { decodeSaslPlain, errLine, messageBody, multiLine, okLine, type Pop3Command, type Pop3Verb } from './protocol.js';

/** What POP3 needs of the mail store. */
export type Pop3Store = Pick<MailStore, 'authenticate' | 'getFolder' | 'listMessages' | 'readMessage' | 'expunge'>;

/** One exclusive lock per mailbox across every POP3 listener of the process (RFC 1939 §8: the maildrop lock). */
export class MailboxLocks {
  private readonly held = new Set<number>();
  tryLock(mailboxId: number): boolean {
    if (this.held.has(mailboxId)) return false;
    this.held.add(mailboxId);
    return true;
  }
  release(mailboxId: number): void {
    this.held.delete(mailboxId);
  }
  isLocked(mailboxId: number): boolean {
    return this.held.has(mailboxId);
  }
}

export interface SessionDeps {
  store: Pop3Store;
  guards: SmtpGuards;
  locks: MailboxLocks;
  /** The peer, for the failed-login guard and logs. */
  remoteAddress: string;
  /** The peer is on MAIL_TRUSTED_NETWORKS: USER/PASS and AUTH PLAIN are accepted without TLS. */
  trusted?: boolean;
}

export type State = 'authorization' | 'transaction' | 'update';

export interface Answer {
  out: string | Buffer;
  /** The connection upgrades to TLS after writing `out` (STLS). */
  startTls?: boolean;
  /** The connection closes after writing `out` (QUIT, too many errors). */
  close?: boolean;
  /** The next line is a SASL continuation for `continueAuth`, not a command. */
  awaitingAuth?: boolean;
  /** The command was refused as invalid (counts toward the bad-command limit). */
  bad?: boolean;
}

interface Entry {
  uid: number;
  size: number;
}

/** Commands allowed in each state (RFC 1939 §§4-6, RFC 2449 CAPA in both, RFC 2595 STLS before login). */
const ALLOWED: Record<State, ReadonlySet<Pop3Verb>> = {
  authorization: new Set(['USER', 'PASS', 'AUTH', 'CAPA', 'STLS', 'QUIT', 'NOOP']),
  transaction: new Set(['STAT', 'LIST', 'RETR', 'DELE', 'NOOP', 'RSET', 'QUIT', 'TOP', 'UIDL', 'CAPA']),
  update: new Set(),
};

const RESP = {
  tlsFirst: '[AUTH] Authentication requires TLS: use STLS first (or the implicit-TLS port)',
  badLogin: '[AUTH] Invalid username or password',
  blocked: '[SYS/TEMP] Too many failed logins; try again later',
  inUse: '[IN-USE] The mailbox is already open in another POP3 session',
  noSuchMessage: 'No such message',
  gone: 'Message was removed by another session',
} as const;

export class Pop3Session {
  state: State = 'authorization';
  private user: string | null = null;
  private account: MailboxAccount | null = null;
  private folderId = 0;
  private uidValidity = 0;
  private messages: Entry[] = [];
  private readonly deleted = new Set<number>();

  constructor(
    private readonly deps: SessionDeps,
    /** Encrypted (implicit TLS, or after STLS). */
    public secure: boolean,
    /** STLS is offered (the plain port, before TLS). */
    private readonly canStartTls: boolean,
  ) {}

  /** The mailbox this session holds the lock of, if any. */
  get lockedMailbox(): number | null {
    return this.account && this.state !== 'authorization' ? this.account.id : null;
  }

  async handle(cmd: Pop3Command): Promise<Answer> {
    if (!ALLOWED[this.state].has(cmd.verb)) return { out: errLine(`${cmd.verb} is not valid in this state`), bad: true };
    switch (cmd.verb) {
      case 'CAPA':
        return { out: multiLine('Capability list follows', this.capabilities()) };
      case 'NOOP':
        return { out: okLine('') };
      case 'QUIT':
        return this.quit();
      case 'STLS':
        if (!this.canStartTls || this.secure) return { out: errLine('TLS is already active'), bad: true };
        return { out: okLine('Begin TLS negotiation'), startTls: true };
      case 'USER':
        if (!this.passwordsAllowed) return { out: errLine(RESP.tlsFirst) };
        this.user = cmd.name;
        return { out: okLine('Send your password') };
      case 'PASS': {
        if (!this.passwordsAllowed) return { out: errLine(RESP.tlsFirst) };
        const user = this.user;
        this.user = null; // RFC 1939 §7: after a failed PASS, USER starts again
        if (user === null) return { out: errLine('Send USER first'), bad: true };
        return { out: await this.login(user, cmd.password) };
      }
      case 'AUTH':
        if (cmd.mechanism === null) return { out: this.passwordsAllowed ? multiLine('SASL mechanisms follow', ['PLAIN']) : multiLine('SASL mechanisms follow', []) };
        if (!this.passwordsAllowed) return { out: errLine(RESP.tlsFirst) };
        if (cmd.mechanism !== 'PLAIN') return { out: errLine('Unsupported SASL mechanism'), bad: true };
        if (cmd.initial === null) return { out: '+ \r\n', awaitingAuth: true };
        return this.saslPlain(cmd.initial === '=' ? '' : cmd.initial);
      case 'STAT': {
        const live = this.live();
        return { out: okLine(`${live.length} ${live.reduce((s, [, e]) => s + e.size, 0)}`) };
      }
      case 'LIST':
        if (cmd.msg !== null) {
          const e = this.entry(cmd.msg);
          return e ? { out: okLine(`${cmd.msg} ${e.size}`) } : { out: errLine(RESP.noSuchMessage) };
        }
        return { out: multiLine(`${this.live().length} messages`, this.live().map(([n, e]) => `${n} ${e.size}`)) };
      case 'UIDL':
        if (cmd.msg !== null) {
          const e = this.entry(cmd.msg);
          return e ? { out: okLine(`${cmd.msg} ${this.uidl(e)}`) } : { out: errLine(RESP.noSuchMessage) };
        }
        return { out: multiLine('Unique-ID listing follows', this.live().map(([n, e]) => `${n} ${this.uidl(e)}`)) };
      case 'RETR':
      case 'TOP': {
        const e = this.entry(cmd.msg);
        if (!e) return { out: errLine(RESP.noSuchMessage) };
        const raw = await this.deps.store.readMessage(this.folderId, e.uid);
        if (!raw) return { out: errLine(RESP.gone) };
        const body = messageBody(raw, cmd.verb === 'TOP' ? cmd.lines : undefined);
        return { out: Buffer.concat([Buffer.from(okLine(cmd.verb === 'TOP' ? 'Top of message follows' : `${e.size} octets`)), body]) };
      }
      case 'DELE': {
        if (!this.entry(cmd.msg)) return { out: errLine(cmd.msg <= this.messages.length ? `Message ${cmd.msg} already deleted` : RESP.noSuchMessage) };
        this.deleted.add(cmd.msg);
        return { out: okLine(`Message ${cmd.msg} deleted`) };
      }
      case 'RSET':
        this.deleted.clear();
        return { out: okLine(`${this.messages.length} messages`) };
    }
  }

  /** The SASL PLAIN response that follows `AUTH PLAIN` without an initial response ("*" cancels, RFC 5034 §4). */
  async continueAuth(line: string): Promise<Answer> {
    if (line === '*') return { out: errLine('Authentication cancelled') };
    return this.saslPlain(line);
  }

  private async saslPlain(response: string): Promise<Answer> {
    const creds = decodeSaslPlain(response);
    if (!creds) {
      this.deps.guards.loginFailed(this.deps.remoteAddress, '');
      return { out: errLine('[AUTH] Malformed PLAIN response') };
    }
    return { out: await this.login(creds.username, creds.password) };
  }

  private async login(username: string, password: string): Promise<string> {
    const { guards, store, locks, remoteAddress } = this.deps;
    if (guards.loginBlocked(remoteAddress, username)) return errLine(RESP.blocked);
    const account = await store.authenticate(addressKey(username), password);
    if (!account) {
      guards.loginFailed(remoteAddress, username);
      return errLine(RESP.badLogin);
    }
    if (!locks.tryLock(account.id)) return errLine(RESP.inUse);
    try {
      const inbox = await store.getFolder(account.id, 'INBOX');
      const list = inbox ? await store.listMessages(inbox.id) : [];
      this.folderId = inbox?.id ?? 0;
      this.uidValidity = inbox?.uidValidity ?? 0;
      this.messages = list.map((m) => ({ uid: m.uid, size: m.size }));
    } catch (err) {
      locks.release(account.id);
      throw err;
    }
    this.account = account;
    this.state = 'transaction';
    const total = this.messages.reduce((s, e) => s + e.size, 0);
    return okLine(`Logged in: ${this.messages.length} messages (${total} octets)`);
  }

  private async quit(): Promise<Answer> {
    if (this.state !== 'transaction') return { out: okLine('Bye'), close: true };
    this.state = 'update';
    const uids = [...this.deleted].map((n) => this.messages[n - 1]!.uid);
    try {
      if (uids.length > 0) await this.deps.store.expunge(this.folderId, uids);
    } catch {
      this.release();
      return { out: errLine('Some deleted messages were not removed'), close: true };
    }
    this.release();
    return { out: okLine(`Bye: ${uids.length} messages deleted`), close: true };
  }

  /** Ends the session's hold on the mailbox (QUIT, or the connection ending without it: nothing is deleted). */
  release(): void {
    if (this.account && this.state !== 'authorization') this.deps.locks.release(this.account.id);
    this.state = 'update';
  }

  /** Passwords are taken over TLS, or in clear from a trusted network (Dovecot's login_trusted_networks). */
  private get passwordsAllowed(): boolean {
    return this.secure || this.deps.trusted === true;
  }

  private capabilities(): string[] {
    const caps = ['TOP', 'UIDL', 'RESP-CODES', 'AUTH-RESP-CODE', 'PIPELINING', 'EXPIRE NEVER', 'IMPLEMENTATION mail-appliance'];
    if (this.state === 'authorization') {
      if (!this.secure && this.canStartTls) caps.push('STLS');
      if (this.passwordsAllowed) caps.push('USER', 'SASL PLAIN');
    }
    return caps;
  }

  private uidl(e: Entry): string {
    return `${this.uidValidity}.${e.uid}`;
  }

  /** The message of a number, unless deleted in this session. */
  private entry(n: number): Entry | undefined {
    return this.deleted.has(n) ? undefined : this.messages[n - 1];
  }

  private live(): Array<[number, Entry]> {
    return this.messages.map((e, i) => [i + 1, e] as [number, Entry]).filter(([n]) => !this.deleted.has(n));
  }
}
