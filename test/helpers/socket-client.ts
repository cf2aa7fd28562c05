// A raw socket client for protocol tests (IMAP, POP3): send exact bytes, wait until what was received
// satisfies a reader, upgrade to TLS in place, see the server close. What arrives is kept as a latin1 string
// (one character per byte, so binary data survives and can be turned back into bytes).
import net from 'node:net';
import tls from 'node:tls';

export class SocketClient {
  /** Received and not yet consumed (latin1: one char per byte). */
  protected received = '';
  private waiters: Array<() => void> = [];
  closed = false;

  protected constructor(protected socket: net.Socket | tls.TLSSocket) {
    this.listen(socket);
  }

  /** An open socket to 127.0.0.1:`port`, implicit TLS when `secure` (self-signed certificates accepted). */
  protected static async open(port: number, secure: boolean): Promise<net.Socket | tls.TLSSocket> {
    const socket = secure ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }) : net.connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve, reject) => {
      socket.once(secure ? 'secureConnect' : 'connect', () => resolve());
      socket.once('error', reject);
    });
    return socket;
  }

  private listen(socket: net.Socket | tls.TLSSocket): void {
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      this.received += d;
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => {});
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Calls `take` on every arrival until it answers something; rejects if the connection closes first. */
  protected async until<T>(take: () => T | undefined, what = 'more data'): Promise<T> {
    for (;;) {
      const got = take();
      if (got !== undefined) return got;
      if (this.closed) throw new Error(`connection closed while waiting for ${what}; unread: ${JSON.stringify(this.received)}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Removes and returns the first `n` characters (bytes) of what was received. */
  protected consume(n: number): string {
    const out = this.received.slice(0, n);
    this.received = this.received.slice(n);
    return out;
  }

  /** Everything received so far (and clears it). */
  take(): string {
    return this.consume(this.received.length);
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** Upgrades this connection to TLS in place (after the server agreed to STARTTLS/STLS). */
  async upgradeTls(): Promise<void> {
    const plain = this.socket;
    plain.removeAllListeners('data');
    plain.removeAllListeners('close');
    const secure = tls.connect({ socket: plain, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', () => resolve());
      secure.once('error', reject);
    });
    this.socket = secure;
    this.listen(secure);
  }

  /** Resolves when the server has closed the connection (what was left unread stays). */
  async whenClosed(): Promise<void> {
    while (!this.closed) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Resolves when the server has closed the connection, with what was left unread. */
  async waitClose(): Promise<string> {
    await this.whenClosed();
    return this.take();
  }

  destroy(): void {
    this.socket.destroy();
  }
}
