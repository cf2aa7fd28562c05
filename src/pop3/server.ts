// The POP3 listeners: MAIL_POP3_PORT (plain, STLS before login) and MAIL_POP3S_PORT (implicit TLS). Each
// connection reads lines (bounded), answers them one at a time in order (pipelining allowed), and hands
// them to its Pop3Session. STLS discards anything the client sent after it before the handshake (no
// plaintext command injection into the TLS session). Bad input gets -ERR or a closed connection, never a
// crash; an unexpected error is logged and answered without details.
import net, { type AddressInfo, type Socket } from 'node:net';
import tls, { type SecureContext, type TLSSocket } from 'node:tls';
import type { Logger } from '../core/logger.js';
import type { NetworkList } from '../core/trusted-networks.js';
import type { TlsMaterial } from '../core/key-material.js';
import { capConnections, ConnectionCaps, endFailedHandshakes, refuseSilently, refuseWith, type ConnectionCapLimits } from '../core/listener-limits.js';
import type { SmtpGuards } from '../limits/smtp-guards.js';
import { errLine, parseCommand, POP3_LIMITS } from './protocol.js';
import { MailboxLocks, Pop3Session, type Answer, type Pop3Store } from './session.js';
import { writeDrained } from '../core/socket-write.js';

export interface Pop3Options {
  store: Pop3Store;
  guards: SmtpGuards;
  tls: TlsMaterial;
  log: Logger;
  bind: string;
  /** Plain port (STLS); 0: any free port. */
  port: number;
  /** Implicit-TLS port; 0: any free port. */
  securePort: number;
  /** Autologout timer; RFC 1939's 10 minutes unless a test says otherwise. */
  idleTimeoutMs?: number;
  /** Implicit-TLS handshake deadline (POP3_LIMITS.tlsHandshakeTimeoutMs unless a test says otherwise). */
  handshakeTimeoutMs?: number;
  /** Connections at once, both listeners together (POP3_LIMITS' figures unless a test says otherwise). */
  connectionCaps?: ConnectionCapLimits;
  /** Clients that may log in without TLS (MAIL_TRUSTED_NETWORKS); none when absent. */
  trustedNetworks?: NetworkList;
}

const TOO_MANY = {
  total: '-ERR [SYS/TEMP] Too many connections, try again later\r\n',
  'per-client': '-ERR [SYS/TEMP] Too many connections from your address\r\n',
} as const;

export interface Pop3Listeners {
  pop3: AddressInfo;
  pop3s: AddressInfo;
  locks: MailboxLocks;
  /** Connections open now, both listeners together (from the TCP accept). */
  readonly sessions: number;
  close(): Promise<void>;
}

class Connection {
  private socket: Socket | TLSSocket;
  private buffer = '';
  private readonly queue: string[] = [];
  private busy = false;
  private closed = false;
  private badCommands = 0;
  private awaitingAuth = false;
  private readonly session: Pop3Session;

  constructor(
    socket: Socket | TLSSocket,
    secure: boolean,
    private readonly opts: Pop3Options & { locks: MailboxLocks; context: SecureContext },
    private readonly connections: Set<Connection>,
  ) {
    this.socket = socket;
    this.session = new Pop3Session({ store: opts.store, guards: opts.guards, locks: opts.locks, remoteAddress: socket.remoteAddress ?? '', trusted: opts.trustedNetworks?.contains(socket.remoteAddress) ?? false }, secure, !secure);
    connections.add(this);
    this.attach(socket);
    this.write('+OK POP3 ready\r\n');
  }

  private attach(socket: Socket | TLSSocket): void {
    socket.setTimeout(this.opts.idleTimeoutMs ?? POP3_LIMITS.idleTimeoutMs);
    // RFC 1939 §3: on the autologout timer the server closes without entering UPDATE (nothing is deleted).
    // The timer counts the client's idleness: while a command is being answered (a slow login's password
    // hash, a large RETR) it does not apply; the answer's write arms it again.
    // A client that stopped reading an answer (its output waiting in the socket all that time) is idle too.
    socket.on('timeout', () => {
      if (!this.busy || socket.writableLength > 0) this.end();
    });
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => this.end());
    socket.on('close', () => this.end());
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    this.buffer += chunk.toString('latin1');
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl).replace(/\r$/, '');
      this.buffer = this.buffer.slice(nl + 1);
      if (line.length > POP3_LIMITS.maxLineBytes) return this.fail('Line too long');
      this.queue.push(line);
    }
    if (this.buffer.length > POP3_LIMITS.maxLineBytes) return this.fail('Line too long');
    if (this.queue.length > POP3_LIMITS.maxQueuedLines) this.socket.pause();
    void this.drain();
  }

  /** Answers queued lines in order, one at a time. */
  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (!this.closed && this.queue.length > 0) {
        const line = this.queue.shift()!;
        const answer = await this.answer(line);
        if (this.closed) return;
        if (answer.bad && ++this.badCommands >= POP3_LIMITS.maxBadCommands) {
          return this.fail('Too many bad commands');
        }
        await this.write(answer.out);
        if (answer.close) return this.end();
        if (answer.startTls) return this.startTls();
        if (this.queue.length <= POP3_LIMITS.maxQueuedLines) this.socket.resume();
      }
    } finally {
      this.busy = false;
    }
  }

  private async answer(line: string): Promise<Answer> {
    try {
      if (this.awaitingAuth) {
        this.awaitingAuth = false;
        return await this.session.continueAuth(line.trim());
      }
      const parsed = parseCommand(line);
      if (!parsed.ok) return { out: errLine(parsed.error), bad: true };
      const answer = await this.session.handle(parsed.command);
      if (answer.awaitingAuth) this.awaitingAuth = true;
      return answer;
    } catch (err) {
      this.opts.log.error({ err }, 'pop3: command failed');
      return { out: errLine('[SYS/TEMP] Internal error, please try again later') };
    }
  }

  /** Writes, waiting for the socket to drain when its buffer is full (a large RETR). */
  private write(out: string | Buffer): Promise<void> {
    if (this.closed) return Promise.resolve();
    return writeDrained(this.socket, out);
  }

  private startTls(): void {
    // Whatever arrived after STLS was sent in plaintext before the handshake: discard it (RFC 2595 §8 spirit; cf. RFC 3207 §6).
    this.buffer = '';
    this.queue.length = 0;
    const plain = this.socket;
    plain.removeAllListeners('data');
    plain.removeAllListeners('timeout');
    plain.removeAllListeners('error');
    plain.removeAllListeners('close');
    plain.setTimeout(0);
    const secure = new tls.TLSSocket(plain, { isServer: true, secureContext: this.opts.context });
    this.socket = secure;
    this.session.secure = true;
    this.attach(secure);
    plain.on('close', () => this.end());
    plain.on('error', () => this.end());
  }

  private fail(message: string): void {
    void this.write(errLine(message)).then(() => this.end());
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.session.release(); // no UPDATE state: marked messages stay
    this.connections.delete(this);
    this.socket.end();
    this.socket.destroySoon?.();
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }
}

function listen(server: net.Server, bind: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, bind, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** Starts the plain (STLS) and implicit-TLS POP3 listeners, sharing one mailbox lock table. */
export async function startPop3(opts: Pop3Options): Promise<Pop3Listeners> {
  const locks = new MailboxLocks();
  const context = tls.createSecureContext({ key: opts.tls.key, cert: opts.tls.cert });
  const connections = new Set<Connection>();
  const full = { ...opts, locks, context };
  // TCP_NODELAY on every accepted socket (kept by the TLS socket of STLS): an answer is one write, and it should
  // not wait for the client's ACK of the previous one.
  const plain = net.createServer({ noDelay: true }, (socket) => void new Connection(socket, false, full, connections));
  const handshakeTimeout = opts.handshakeTimeoutMs ?? POP3_LIMITS.tlsHandshakeTimeoutMs;
  const implicit = tls.createServer({ key: opts.tls.key, cert: opts.tls.cert, handshakeTimeout, noDelay: true }, (socket) => void new Connection(socket, true, full, connections));
  // A failed handshake on the implicit-TLS port: the socket is dropped, the listener carries on.
  endFailedHandshakes(implicit, (err) => opts.log.debug({ err }, 'pop3s: TLS handshake failed'));
  // Counted from the TCP accept, both listeners together, before any handshake.
  const caps = new ConnectionCaps(opts.connectionCaps ?? { total: POP3_LIMITS.maxConnections, perClient: POP3_LIMITS.maxConnectionsPerClient });
  capConnections(plain, caps, (socket, why) => refuseWith(TOO_MANY[why])(socket));
  capConnections(implicit, caps, refuseSilently);
  const close = async () => {
    const closing = [plain, implicit].filter((s) => s.listening).map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
    for (const c of connections) c.end();
    await Promise.all(closing);
  };
  try {
    const pop3 = await listen(plain, opts.bind, opts.port);
    const pop3s = await listen(implicit, opts.bind, opts.securePort);
    return {
      pop3,
      pop3s,
      locks,
      close,
      get sessions() {
        return caps.size;
      },
    };
  } catch (err) {
    await close();
    throw err;
  }
}
