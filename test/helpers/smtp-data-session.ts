// One SMTP session by hand, for tests of what a server does with DATA: commands one at a time, then message
// lines in parts, the final dot when the test asks. The caller opens the socket (plain or TLS, from the local
// address it wants) and walks it to DATA with `command`.
import type net from 'node:net';

export class SmtpDataSession {
  private buffer = '';
  private waiting: Array<() => void> = [];
  private closed = false;
  /** The whole of the reply `reply` last took, every line of a multi-line one (e.g. EHLO's extensions). */
  lastReply = '';

  constructor(private readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.buffer += d.toString('latin1');
      this.waiting.splice(0).forEach((w) => w());
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.waiting.splice(0).forEach((w) => w());
    });
  }

  /** The next complete reply (its last line), checked against `expect`. */
  async reply(expect?: RegExp): Promise<string> {
    for (;;) {
      const m = /(?:^|\n)(\d{3}) [^\r\n]*\r\n/.exec(this.buffer);
      if (m) {
        this.lastReply = this.buffer.slice(0, m.index + m[0].length);
        this.buffer = this.buffer.slice(m.index + m[0].length);
        const line = m[0].trim();
        if (expect && !expect.test(line)) throw new Error(`unexpected reply ${line}`);
        return line;
      }
      if (this.closed) throw new Error(`closed by the server; unread: ${JSON.stringify(this.buffer)}`);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /** Sends a command line and checks its reply. */
  async command(line: string, expect: RegExp): Promise<string> {
    this.socket.write(`${line}\r\n`);
    return this.reply(expect);
  }

  /** Raw text, e.g. the message header once in DATA. */
  write(text: string): void {
    this.socket.write(text);
  }

  /** Sends `bytes` of message data in lines of `line`, waits until the kernel took them and a moment for the server to read. */
  async send(bytes: number, line = 'a'.repeat(76) + '\r\n'): Promise<void> {
    await new Promise<void>((resolve) => this.socket.write(line.repeat(Math.ceil(bytes / line.length)), () => resolve()));
    await new Promise((r) => setTimeout(r, 300));
  }

  /** Ends DATA: the server's answer to the message. */
  async finish(): Promise<string> {
    this.socket.write('.\r\n');
    const r = await this.reply();
    this.socket.end('QUIT\r\n');
    return r;
  }

  destroy(): void {
    this.socket.destroy();
  }
}
