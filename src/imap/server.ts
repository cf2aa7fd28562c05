// The IMAP listeners: `imapPort` (plaintext + STARTTLS) and `imapsPort` (implicit TLS), one SessionDeps for
// both. `close()` stops accepting and says BYE to every open session.
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import type { TlsMaterial } from '../core/key-material.js';
import { ByteBudget, capConnections, ConnectionCaps, endFailedHandshakes, refuseSilently, refuseWith, type ConnectionCapLimits } from '../core/listener-limits.js';
import { ImapConnection } from './connection.js';
import {
  IDLE_TIMEOUT_MS,
  LOGIN_TIMEOUT_MS,
  MAX_APPEND_BUFFERED_BYTES,
  MAX_APPEND_BUFFERED_BYTES_PER_CLIENT,
  MAX_CONNECTIONS,
  MAX_CONNECTIONS_PER_CLIENT,
  TLS_HANDSHAKE_TIMEOUT_MS,
} from './protocol/limits.js';
import type { SessionDeps } from './session.js';

export interface ImapServerOptions extends SessionDeps {
  tls: Pick<TlsMaterial, 'cert' | 'key'>;
  /** Autologout; RFC 3501 §5.4's 30 minutes unless a test shortens it. */
  idleTimeoutMs?: number;
  /** Time to log in after connecting (LOGIN_TIMEOUT_MS unless a test shortens it). */
  loginTimeoutMs?: number;
  /** Implicit-TLS handshake deadline (TLS_HANDSHAKE_TIMEOUT_MS unless a test shortens it). */
  handshakeTimeoutMs?: number;
  /** Connections at once, both listeners together (MAX_CONNECTIONS, MAX_CONNECTIONS_PER_CLIENT unless a test says). */
  connectionCaps?: ConnectionCapLimits;
  /** APPEND literals held at once, both listeners together (MAX_APPEND_BUFFERED_BYTES[_PER_CLIENT] unless a test says). */
  appendBudget?: { total: number; perClient: number };
}

const TOO_MANY = {
  total: '* BYE [UNAVAILABLE] Too many connections, try again later\r\n',
  'per-client': '* BYE [UNAVAILABLE] Too many connections from your address\r\n',
} as const;

export class ImapServer {
  private readonly servers: net.Server[] = [];
  private readonly connections = new Set<ImapConnection>();
  private readonly secureContext: tls.SecureContext;
  /** Sockets of both listeners, counted from the TCP accept (before any TLS handshake). */
  private readonly caps: ConnectionCaps;
  /** APPEND literals being received, both listeners together. */
  readonly appendBudget: ByteBudget;

  constructor(private readonly opts: ImapServerOptions) {
    this.secureContext = tls.createSecureContext({ cert: opts.tls.cert, key: opts.tls.key, minVersion: 'TLSv1.2' });
    this.caps = new ConnectionCaps(opts.connectionCaps ?? { total: MAX_CONNECTIONS, perClient: MAX_CONNECTIONS_PER_CLIENT });
    const budget = opts.appendBudget ?? { total: MAX_APPEND_BUFFERED_BYTES, perClient: MAX_APPEND_BUFFERED_BYTES_PER_CLIENT };
    this.appendBudget = new ByteBudget(budget.total, budget.perClient);
  }

  get sessionCount(): number {
    return this.connections.size;
  }

  private accept(socket: net.Socket, secure: boolean): void {
    const conn = new ImapConnection(socket, secure, this.opts, {
      secureContext: this.secureContext,
      idleTimeoutMs: this.opts.idleTimeoutMs ?? IDLE_TIMEOUT_MS,
      loginTimeoutMs: this.opts.loginTimeoutMs ?? LOGIN_TIMEOUT_MS,
      appendBudget: this.appendBudget,
    });
    this.connections.add(conn);
    void conn.done.then(() => this.connections.delete(conn));
    conn.start();
  }

  /** Listens with STARTTLS (`implicitTls` false) or implicit TLS; resolves with the bound address. */
  async listen(port: number, host: string, implicitTls: boolean): Promise<AddressInfo> {
    const handshakeTimeout = this.opts.handshakeTimeoutMs ?? TLS_HANDSHAKE_TIMEOUT_MS;
    let server: net.Server;
    if (implicitTls) {
      const secure = tls.createServer({ cert: this.opts.tls.cert, key: this.opts.tls.key, minVersion: 'TLSv1.2', handshakeTimeout, noDelay: true }, (s) => this.accept(s, true));
      endFailedHandshakes(secure, (err) => this.opts.log.debug({ err }, 'imaps handshake failed'));
      server = secure;
    } else {
      // TCP_NODELAY on every accepted socket (kept by the TLS socket of STARTTLS): a response is one write, and it
      // should not wait for the client's ACK of the previous one.
      server = net.createServer({ noDelay: true }, (s) => this.accept(s, false));
    }
    server.on('error', (err) => this.opts.log.error({ err }, 'imap listener error'));
    capConnections(server, this.caps, (socket, why) => (implicitTls ? refuseSilently(socket) : refuseWith(TOO_MANY[why])(socket)));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.servers.push(server);
    return server.address() as AddressInfo;
  }

  async close(): Promise<void> {
    await Promise.all([
      ...this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
      ...[...this.connections].map(async (c) => {
        await c.bye('Server shutting down');
        await Promise.race([c.done, new Promise((r) => setTimeout(r, 3000).unref())]);
      }),
    ]);
  }
}
