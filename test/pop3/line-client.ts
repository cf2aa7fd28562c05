// A raw line-oriented POP3 client for protocol corners real clients never produce: send exact bytes, read one
// line or a dot-terminated multi-line answer, upgrade to TLS in place, see the server close. The socket
// handling is the shared test/helpers/socket-client.ts.
import { SocketClient } from '../helpers/socket-client.js';

export class LineClient extends SocketClient {
  static async connect(port: number, opts: { tls?: boolean } = {}): Promise<LineClient> {
    return new LineClient(await SocketClient.open(port, opts.tls ?? false));
  }

  /** One response line, without its CRLF. */
  line(): Promise<string> {
    return this.until(() => {
      const i = this.received.indexOf('\r\n');
      return i < 0 ? undefined : this.consume(i + 2).slice(0, i);
    }, 'a line');
  }

  /** A multi-line answer's body after its first line: the raw bytes up to and excluding the terminating `.\r\n`. */
  block(): Promise<Buffer> {
    return this.until(() => {
      if (this.received.startsWith('.\r\n')) {
        this.consume(3);
        return Buffer.alloc(0);
      }
      const end = this.received.indexOf('\r\n.\r\n');
      if (end < 0) return undefined;
      return Buffer.from(this.consume(end + 5).slice(0, end + 2), 'latin1');
    }, 'a multi-line answer');
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
  startTls(): Promise<void> {
    return this.upgradeTls();
  }

  close(): void {
    this.destroy();
  }
}
