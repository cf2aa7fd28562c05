// A minimal IMAP client for the benchmarks (bench-imap, bench-soak): implicit TLS, tagged commands, responses
// read literal-aware (literals skipped, not kept), IDLE ended by DONE. Lean on purpose, so that the figures are
// the server's rather than a client library's parsing.
import tls from 'node:tls';

/** A minimal IMAP client: sends tagged commands, reads responses literal-aware, answers continuations. */
export class Client {
  private buf = Buffer.alloc(0);
  private pos = 0;
  private tagN = 0;
  private waiter: (() => void) | null = null;
  private constructor(private readonly socket: tls.TLSSocket) {
    socket.on('data', (d: Buffer) => {
      this.buf = this.pos ? Buffer.concat([this.buf.subarray(this.pos), d]) : Buffer.concat([this.buf, d]);
      this.pos = 0;
      this.waiter?.();
    });
    socket.on('error', () => {});
  }

  static async connect(port: number): Promise<Client> {
    const socket = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false });
    await new Promise((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
    const c = new Client(socket);
    await c.readLine();
    return c;
  }

  private async more(): Promise<void> {
    await new Promise<void>((resolve) => (this.waiter = resolve));
    this.waiter = null;
  }

  /** The next response line (literals inside it skipped over); '' … */
  async readLine(): Promise<string> {
    let line = '';
    for (;;) {
      const nl = this.buf.indexOf(0x0a, this.pos);
      if (nl === -1) {
        await this.more();
        continue;
      }
      const part = this.buf.toString('latin1', this.pos, nl + 1);
      this.pos = nl + 1;
      const m = /\{(\d+)\}\r\n$/.exec(part);
      if (!m) return line + part;
      line += part;
      let need = Number(m[1]);
      while (need > 0) {
        const have = this.buf.length - this.pos;
        if (have === 0) {
          await this.more();
          continue;
        }
        const take = Math.min(have, need);
        this.pos += take;
        need -= take;
      }
    }
  }

  /** Sends a command; resolves with the count of untagged responses when the tagged one arrives. */
  async run(command: string | Buffer, onUntagged?: (line: string) => void): Promise<{ status: string; untagged: number }> {
    const tag = `t${++this.tagN}`;
    this.socket.write(typeof command === 'string' ? `${tag} ${command}\r\n` : Buffer.concat([Buffer.from(`${tag} `), command, Buffer.from('\r\n')]));
    let untagged = 0;
    for (;;) {
      const line = await this.readLine();
      if (line.startsWith(tag + ' ')) return { status: line.slice(tag.length + 1, tag.length + 3), untagged };
      if (line.startsWith('*')) {
        untagged++;
        onUntagged?.(line);
      }
    }
  }

  /** IDLE until `stop` resolves, then DONE. */
  async idle(stop: Promise<void>): Promise<void> {
    const tag = `t${++this.tagN}`;
    this.socket.write(`${tag} IDLE\r\n`);
    while (!(await this.readLine()).startsWith('+')) {
      /* untagged before the continuation */
    }
    let ended = false;
    const reading = (async () => {
      for (;;) {
        const line = await this.readLine();
        if (line.startsWith(tag + ' ')) return;
        if (!ended && line.includes('EXISTS')) this.onExists?.();
      }
    })();
    await stop;
    ended = true;
    this.socket.write('DONE\r\n');
    await reading;
  }
  onExists: (() => void) | null = null;

  close(): void {
    this.socket.destroy();
  }
}


