// A raw line-oriented client for protocol corners real clients never produce: send exact bytes, read one
// line or a dot-terminated multi-line answer, upgrade to TLS in place, see the server close.
import net from 'node:net';
import tls from 'node:tls';

export class LineClient {
  private buffer = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  closed = false;

  private constructor(private socket: net.Socket | tls.TLSSocket) {
    this.listen(socket);
  }

  static async connect(port: number, opts: { tls?: boolean } = {}): Promise<LineClient> {
    const socket = opts.tls
      ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false })
      : net.connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve, reject) => {
      socket.once(opts.tls ? 'secureConnect' : 'connect', () => resolve());
      socket.once('error', reject);
    });
    return new LineClient(socket);
  }

  private listen(socket: net.Socket | tls.TLSSocket): void {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
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

  private async until<T>(take: () => T | undefined): Promise<T> {
    for (;;) {
      const got = take();
      if (got !== undefined) return got;
      if (this.closed) throw new Error(`connection closed (unread: ${JSON.stringify(this.buffer.toString('latin1'))})`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** One response line, without its CRLF. */
  line(): Promise<string> {
    return this.until(() => {
      const i = this.buffer.indexOf('\r\n');
      if (i < 0) return undefined;
      const line = this.buffer.subarray(0, i).toString('latin1');
      this.buffer = this.buffer.subarray(i + 2);
      return line;
    });
  }

  /** A multi-line answer's body after its first line: the raw bytes up to and excluding the terminating `.\r\n`. */
  block(): Promise<Buffer> {
    return this.until(() => {
      const end = this.buffer.indexOf('\r\n.\r\n');
      if (this.buffer.subarray(0, 3).toString() === '.\r\n') {
        this.buffer = this.buffer.subarray(3);
        return Buffer.alloc(0);
      }
      if (end < 0) return undefined;
      const body = this.buffer.subarray(0, end + 2);
      this.buffer = this.buffer.subarray(end + 5);
      return body;
    });
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** Sends a command and returns the first response line. */
  async cmd(line: string): Promise<string> {
    this.write(`${line}\r\n`);
    return this.line();
  }

  /** Sends a command expecting a multi-line answer: first line and body lines. */
  async multi(line: string): Promise<{ first: string; lines: string[] }> {
    const first = await this.cmd(line);
    if (!first.startsWith('+OK')) return { first, lines: [] };
    const body = (await this.block()).toString('latin1');
    return { first, lines: body.length ? body.replace(/\r\n$/, '').split('\r\n') : [] };
  }

  /** Upgrades this connection to TLS (after the server said yes to STLS/STARTTLS). */
  async startTls(): Promise<void> {
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

  /** Resolves when the server has closed the connection. */
  async whenClosed(): Promise<void> {
    await this.until(() => (this.closed ? true : undefined)).catch(() => undefined);
  }

  close(): void {
    this.socket.destroy();
  }
}
