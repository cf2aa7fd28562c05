// One client connection: bytes in through the CommandReader, commands run one at a time through the
// command table (state checked first), responses out with backpressure. STARTTLS swaps the socket for a
// TLS socket and drops anything the client pipelined before the handshake. An APPEND's literal is admitted
// before it is read (RFC 3501 §7.5): once the commands before it have run, its quota is checked and its
// bytes are reserved in the listener's memory budget, given back when the command is done.
// A command's output (untagged responses, then its tagged line) is gathered and written once (or in pieces of
// RESPONSE_WRITE_BYTES for a large FETCH), and a continuation request carries what was gathered before it: a client
// with Nagle's algorithm and delayed ACKs (imaplib's defaults) otherwise waits ~40 ms for the second write of each
// response. The accepted socket has TCP_NODELAY (server.ts), which the TLS socket of STARTTLS keeps (same TCP socket).
// COMPRESS DEFLATE (RFC 4978) puts raw DEFLATE between the socket (plain or TLS) and the protocol both ways: input
// is inflated before the reader sees it, and each write (a whole response) is deflated and flushed (Z_SYNC_FLUSH)
// into one socket write, so the one-write rule holds compressed too.
import net from 'node:net';
import tls from 'node:tls';
import zlib from 'node:zlib';
import { capabilities } from './capabilities.js';
import { beforeAppendLiteral } from './commands/append.js';
import { COMMANDS } from './commands/index.js';
import { bad, no, type Result } from './commands/types.js';
import { CommandError, parseCommand, type Command } from './protocol/commands.js';
import { MAX_APPEND_LITERAL_BYTES, MAX_BAD_COMMANDS, MAX_QUEUED_COMMANDS, RESPONSE_WRITE_BYTES } from './protocol/limits.js';
import { CommandReader, isAppend, type Admission, type LiteralAnnouncement, type RawCommand } from './protocol/reader.js';
import { Session, type ClientChannel, type SessionDeps } from './session.js';
import type { ByteBudget } from '../core/listener-limits.js';
import { writeDrained } from '../core/socket-write.js';

export interface ConnectionOptions {
  secureContext: tls.SecureContext;
  idleTimeoutMs: number;
  /** A connection not logged in this long after it was accepted is closed (LOGIN_TIMEOUT_MS). */
  loginTimeoutMs: number;
  /** APPEND literals held in memory, all connections of the listener together and per client address. */
  appendBudget: ByteBudget;
}

export class ImapConnection implements ClientChannel {
  secure: boolean;
  readonly trusted: boolean;
  readonly remoteAddress: string;
  private socket: net.Socket;
  private readonly reader: CommandReader;
  private readonly queue: RawCommand[] = [];
  private running = false;
  private pendingContinuation: ((line: string | null) => void) | null = null;
  private closed = false;
  private badCount = 0;
  /** Paused for backpressure: too many commands queued. */
  private paused = false;
  /** Paused while the reader waits to know whether a literal may be read. */
  private holding = false;
  /** Waiting for the commands before an APPEND to have run (`settled`). */
  private settledWaiters: Array<() => void> = [];
  readonly session: Session;
  private readonly onData = (chunk: Buffer) => this.reader.push(chunk);
  /** While a command runs (and waits for no continuation line), its output is gathered here (`write`). */
  private gathering = false;
  private gathered: Array<string | Buffer> = [];
  private gatheredBytes = 0;
  /** COMPRESS=DEFLATE is active (RFC 4978): `deflate` compresses what is written, `inflate` what is read. */
  compressed = false;
  private deflate: zlib.DeflateRaw | null = null;
  private inflate: zlib.InflateRaw | null = null;
  /** Deflated output of the write in progress. */
  private deflated: Buffer[] = [];
  /** Compressed writes one after another (each is deflate, flush, socket write). */
  private sending: Promise<void> = Promise.resolve();
  private readonly onCompressedData = (chunk: Buffer) => this.inflate?.write(chunk);
  /** Resolves when the connection is closed. */
  readonly done: Promise<void>;
  private resolveDone!: () => void;

  constructor(
    socket: net.Socket,
    secure: boolean,
    readonly deps: SessionDeps,
    private readonly opts: ConnectionOptions,
  ) {
    this.socket = socket;
    this.secure = secure;
    this.remoteAddress = socket.remoteAddress ?? 'unknown';
    this.trusted = deps.trustedNetworks?.contains(socket.remoteAddress) ?? false;
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    this.session = new Session(deps, this);
    this.session.onRevoked = () => void this.bye('Mailbox deleted');
    this.reader = new CommandReader({
      command: (cmd) => this.enqueue(cmd),
      continueLiteral: () => void this.writeNow('+ Ready for literal data\r\n'),
      // An untagged OK may come at any time (RFC 3501 §7.1); only when nothing else is being said.
      literalEnded: () => {
        if (!this.gathering && this.isSettled()) void this.writeNow('* OK Literal received\r\n');
      },
      reject: (tag, reason) => {
        void this.write(`${tag} BAD ${reason}\r\n`);
        this.countBad();
      },
      refuse: (tag, refusal) => void this.write(`${tag} NO [${refusal.code}] ${refusal.text}\r\n`),
      fatal: (reason) => void this.bye(reason),
      appendAllowed: () => this.loggedIn,
      admit: (literal) => this.admit(literal),
      release: (bytes) => this.opts.appendBudget.release(this.remoteAddress, bytes),
      hold: (on) => {
        this.holding = on;
        this.updatePause();
      },
    });
    this.attach(socket);
    // Whatever a client sends before it logs in (NOOPs, a STARTTLS whose handshake never comes), it has this
    // long: an idle or trickling pre-login connection costs the server a socket for minutes, not half an hour.
    const loginDeadline = setTimeout(() => {
      if (this.session.state === 'not-authenticated') void this.bye('Login timeout');
    }, opts.loginTimeoutMs);
    loginDeadline.unref();
    void this.done.then(() => clearTimeout(loginDeadline));
  }

  private get loggedIn(): boolean {
    return this.session.state === 'authenticated' || this.session.state === 'selected';
  }

  /**
   * Whether an APPEND's literal may be read, decided before the `+` (or, non-synchronizing, before its bytes are
   * kept): once the commands before it have run (a pipelined LOGIN, CREATE or EXPUNGE changes the answer), its
   * size against the target's quota (RFC 9208 §5.2), then against the memory budget (RFC 5530 LIMIT). Its size
   * against APPENDLIMIT (or the pre-login literal limit) the reader judges right after this answers, so that a
   * NO [TOOBIG] too comes after the answers of those commands.
   */
  private admit(literal: LiteralAnnouncement): Admission | Promise<Admission> {
    const first = literal.parts[0];
    if (!first || first.kind !== 'text' || !isAppend(first.text)) return { reserved: 0 };
    return this.settled().then(async (): Promise<Admission> => {
      if (!this.loggedIn || this.closed || literal.size > MAX_APPEND_LITERAL_BYTES) return { reserved: 0 };
      let command: Command | null = null;
      try {
        // The command as far as it came, its message an empty stand-in: a BAD one is answered when it has all come.
        command = parseCommand({ parts: [...literal.parts, { kind: 'literal', data: Buffer.alloc(0) }, { kind: 'text', text: '' }] }, { utf8: this.session.utf8Names }).command;
      } catch {
        /* answered BAD once read */
      }
      if (command?.name === 'APPEND') {
        try {
          const refusal = await beforeAppendLiteral(this.session, command, literal.size);
          if (refusal) return { refused: { code: refusal.code ?? 'CANNOT', text: refusal.text } };
        } catch (err) {
          // The look failed (the store is busy or broken): the literal may come; the APPEND itself will tell.
          this.deps.log.warn({ err }, 'imap append pre-check failed');
        }
      }
      if (this.closed) return { reserved: 0 };
      if (!this.opts.appendBudget.reserve(this.remoteAddress, literal.size)) {
        return { refused: { code: 'LIMIT', text: 'Too many messages being uploaded at once; try again later' } };
      }
      return { reserved: literal.size };
    });
  }

  /** Resolves once no command runs or waits in the queue (or one waits for a continuation line, or the connection closed). */
  private settled(): Promise<void> {
    if (this.isSettled()) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  private isSettled(): boolean {
    return this.closed || this.pendingContinuation !== null || (!this.running && this.queue.length === 0);
  }

  private wakeSettled(): void {
    if (!this.settledWaiters.length || !this.isSettled()) return;
    const waiters = this.settledWaiters;
    this.settledWaiters = [];
    for (const w of waiters) w();
  }

  private updatePause(): void {
    const pause = this.paused || this.holding;
    if (pause) this.socket.pause();
    else this.socket.resume();
  }

  /** Gives back what a command reserved of the memory budget. */
  private releaseCommand(raw: RawCommand): void {
    if (raw.reserved) this.opts.appendBudget.release(this.remoteAddress, raw.reserved);
    raw.reserved = 0;
  }

  start(): void {
    void this.write(`* OK [CAPABILITY ${capabilities(this.session).join(' ')}] ${this.deps.hostname} IMAP4rev1 ready\r\n`);
  }

  private attach(socket: net.Socket): void {
    this.socket = socket;
    socket.on('data', this.onData);
    socket.on('error', (err) => this.deps.log.debug({ err, ip: this.remoteAddress }, 'imap socket error'));
    socket.on('close', () => this.onClose());
    socket.setTimeout(this.opts.idleTimeoutMs);
    // Idle means no bytes either way and no command running (a long SEARCH is not idleness), or a command
    // whose answer the client has stopped reading (its output waits in the socket for the whole period).
    socket.on('timeout', () => {
      if (!this.running || this.pendingContinuation || socket.writableLength > 0) void this.bye('Autologout; idle for too long');
    });
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.reader.close();
    this.session.close();
    for (const raw of this.queue) this.releaseCommand(raw);
    this.queue.length = 0;
    this.pendingContinuation?.(null);
    this.pendingContinuation = null;
    this.inflate?.destroy();
    this.deflate?.destroy();
    this.wakeSettled();
    this.resolveDone();
  }

  /** Sends BYE and closes (server shutdown, timeouts, abuse). */
  async bye(reason: string): Promise<void> {
    if (this.closed) return;
    // A client that does not read would keep the BYE (and the close after it) waiting for a drain forever.
    await Promise.race([this.writeNow(`* BYE ${reason}\r\n`), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    this.socket.end();
    this.socket.destroySoon?.();
    setTimeout(() => this.socket.destroy(), 2000).unref();
  }

  private countBad(): void {
    if (++this.badCount >= MAX_BAD_COMMANDS) void this.bye('Too many invalid commands');
  }

  /**
   * Writes protocol text or bytes: while a command runs, gathered (written with its tagged line, or once
   * RESPONSE_WRITE_BYTES are gathered: then the promise waits for the socket to drain); else at once.
   */
  write(data: string | Buffer): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (!this.gathering) return this.writeNow(data);
    this.gathered.push(data);
    this.gatheredBytes += data.length;
    return this.gatheredBytes < RESPONSE_WRITE_BYTES ? Promise.resolve() : this.writeNow();
  }

  /** Writes what was gathered and `data` after it, in one write. */
  private writeNow(data?: string | Buffer): Promise<void> {
    if (data !== undefined) this.gathered.push(data);
    const parts = this.gathered;
    if (this.closed || parts.length === 0) return Promise.resolve();
    this.gathered = [];
    this.gatheredBytes = 0;
    const whole = parts.length === 1 ? parts[0]! : parts.every((p) => typeof p === 'string') ? parts.join('') : Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
    return this.send(whole);
  }

  /** One socket write of `data`, deflated and flushed when COMPRESS is active (in the order of the calls). */
  private send(data: string | Buffer): Promise<void> {
    const deflate = this.deflate;
    if (!deflate) return writeDrained(this.socket, data);
    const run = async () => {
      if (this.closed) return;
      await new Promise<void>((resolve) => {
        deflate.write(data);
        deflate.flush(zlib.constants.Z_SYNC_FLUSH, () => resolve());
      });
      // The flush's output has been emitted by now; should a piece still be on its way, wait a turn for it.
      if (!this.deflated.length) await new Promise((resolve) => setImmediate(resolve));
      const out = this.deflated;
      this.deflated = [];
      if (out.length && !this.closed) await writeDrained(this.socket, out.length === 1 ? out[0]! : Buffer.concat(out));
    };
    const p = this.sending.then(run, run);
    this.sending = p.catch(() => undefined);
    return p;
  }

  /** RFC 4978 §3: compression starts right after the tagged OK, which itself goes out uncompressed. */
  private startCompression(): void {
    this.compressed = true;
    const deflate = zlib.createDeflateRaw();
    const inflate = zlib.createInflateRaw();
    deflate.on('data', (chunk: Buffer) => this.deflated.push(chunk));
    deflate.on('error', (err) => this.deps.log.debug({ err }, 'imap deflate failed'));
    inflate.on('data', (chunk: Buffer) => this.reader.push(chunk));
    // Input that does not inflate cannot be told from commands: the connection ends.
    inflate.on('error', () => this.socket.destroy());
    this.deflate = deflate;
    this.inflate = inflate;
    this.socket.off('data', this.onData);
    this.socket.on('data', this.onCompressedData);
  }

  /** Sends `+ text` (with the output gathered before it) and waits for the client's line; meanwhile nothing is gathered (IDLE's pushes go out as they come). */
  async continuation(text: string): Promise<string | null> {
    const gathering = this.gathering;
    this.gathering = false;
    void this.writeNow(`+ ${text}\r\n`);
    try {
      if (this.closed) return null;
      const next = this.queue.shift();
      if (next) {
        this.releaseCommand(next);
        return firstLine(next);
      }
      return await new Promise<string | null>((resolve) => {
        this.pendingContinuation = resolve;
        this.wakeSettled();
      });
    } finally {
      this.gathering = gathering;
    }
  }

  private enqueue(cmd: RawCommand): void {
    if (this.pendingContinuation) {
      const resolve = this.pendingContinuation;
      this.pendingContinuation = null;
      this.releaseCommand(cmd);
      resolve(firstLine(cmd));
      return;
    }
    this.queue.push(cmd);
    if (this.queue.length >= MAX_QUEUED_COMMANDS && !this.paused) {
      this.paused = true;
      this.updatePause();
    }
    void this.pump();
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length && !this.closed) {
        const raw = this.queue.shift()!;
        if (this.paused && this.queue.length < MAX_QUEUED_COMMANDS / 2) {
          this.paused = false;
          this.updatePause();
        }
        this.gathering = true;
        try {
          await this.execute(raw);
        } catch (err) {
          // Never let one command take the listener down: log, say BYE, close this connection only.
          this.deps.log.error({ err }, 'imap connection failed');
          await this.bye('Internal error');
        } finally {
          this.gathering = false;
          this.releaseCommand(raw);
        }
        // What a command answered without its own tagged line (refused, unparsable) was gathered: out with it.
        await this.writeNow();
      }
    } finally {
      this.running = false;
      this.wakeSettled();
    }
  }

  private async execute(raw: RawCommand): Promise<void> {
    if (raw.refused) {
      // A literal of it was refused and dropped as it came (non-synchronizing: RFC 7888 lets the server say no only now).
      await this.write(`${firstLine(raw).split(' ')[0] || '*'} NO [${raw.refused.code}] ${raw.refused.text}\r\n`);
      return;
    }
    let tag: string;
    let command: Command;
    try {
      ({ tag, command } = parseCommand(raw, { utf8: this.session.utf8Names }));
    } catch (err) {
      if (!(err instanceof CommandError)) this.deps.log.error({ err }, 'imap parser failed');
      await this.write(err instanceof CommandError ? `${err.tag} BAD ${err.message}\r\n` : '* BAD Invalid command\r\n');
      this.countBad();
      return;
    }
    const s = this.session;
    const spec = COMMANDS[command.name] as (typeof COMMANDS)[Command['name']];
    let result: Result;
    if (!spec.states.includes(s.state)) {
      result = bad(s.state === 'not-authenticated' ? 'Log in first' : s.state === 'authenticated' && spec.states.length === 1 ? 'No mailbox selected' : `${command.name} not allowed now`);
    } else {
      try {
        result = await (spec.handle as (s: Session, c: Command) => Promise<Result>)(s, command);
      } catch (err) {
        this.deps.log.error({ err, command: command.name }, 'imap command failed');
        result = no('Internal error; try again later', 'UNAVAILABLE');
      }
      if (s.selected && spec.updates !== 'none' && !this.closed) {
        try {
          await s.sync(spec.updates === 'full');
        } catch (err) {
          this.deps.log.error({ err }, 'imap sync failed');
        }
      }
    }
    if (result.status === 'BAD') this.countBad();
    else this.badCount = 0;
    const code = result.code ? `[${result.code}] ` : '';
    this.gathering = false;
    const written = this.writeNow(`${tag} ${result.status} ${code}${result.text}\r\n`);
    // The OK went to the socket as it was; what follows it, both ways, is compressed.
    if (result.effect === 'compress') this.startCompression();
    await written;
    if (result.effect === 'starttls') this.upgrade();
    else if (result.effect === 'logout') {
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 2000).unref();
    }
  }

  /** RFC 3501 §6.2.1: the TLS handshake starts right after the tagged OK; pipelined plaintext is discarded. */
  private upgrade(): void {
    const plain = this.socket;
    plain.off('data', this.onData);
    plain.setTimeout(0);
    plain.removeAllListeners('timeout');
    for (const raw of this.queue) this.releaseCommand(raw);
    this.queue.length = 0;
    // The queue that paused reading is gone: a pause kept now would stop the TLS socket for good.
    this.paused = false;
    const secure = new tls.TLSSocket(plain, { isServer: true, secureContext: this.opts.secureContext });
    this.secure = true;
    this.attach(secure);
    // After the swap: a reader that was holding input stops holding, and reading resumes on the TLS socket.
    this.reader.reset();
    this.updatePause();
  }
}

function firstLine(cmd: RawCommand): string {
  const p = cmd.parts[0];
  return p && p.kind === 'text' ? p.text : '';
}
