// bench-send's API client: HTTP/1.1 over kept-alive sockets, one request in flight per socket, the request
// written as one string, the answer read by its Content-Length. It shares the machine's two cores with the
// appliance it measures, so it does as little as a load generator can (as wrk does): node:http's client cost
// the client thread ~0.3 ms of CPU per request at 500 requests/s (15% of a core, bench:send's perf profile),
// this one a fraction of that. Answers that are not plain Content-Length bodies (chunked, or a connection
// closed early) fail the request, which the bench reports.
import net from 'node:net';

export interface LeanResponse {
  status: number;
  text: string;
}

interface Pending {
  request: string;
  resolve(r: LeanResponse): void;
  reject(err: Error): void;
}

interface Session {
  socket: net.Socket;
  current: Pending | null;
  chunks: Buffer[];
  bytes: number;
}

const HEADER_END = Buffer.from('\r\n\r\n');

export class LeanHttpClient {
  private readonly idle: Session[] = [];
  private readonly waiting: Pending[] = [];
  private open = 0;
  private closed = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly maxSockets: number,
    /** Header lines sent with every request (without the final CRLF), e.g. `Authorization: Bearer …`. */
    private readonly headers: string[],
  ) {}

  post(path: string, body: string, contentType = 'application/json'): Promise<LeanResponse> {
    const request =
      `POST ${path} HTTP/1.1\r\nHost: ${this.host}:${this.port}\r\n${this.headers.map((h) => `${h}\r\n`).join('')}` +
      `Content-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    return this.request(request);
  }

  /** A GET with `extra` header lines besides the client's own (e.g. `User-Agent: …`). */
  get(path: string, extra: string[] = []): Promise<LeanResponse> {
    return this.request(`GET ${path} HTTP/1.1\r\nHost: ${this.host}:${this.port}\r\n${[...this.headers, ...extra].map((h) => `${h}\r\n`).join('')}\r\n`);
  }

  private request(request: string): Promise<LeanResponse> {
    return new Promise<LeanResponse>((resolve, reject) => {
      if (this.closed) return reject(new Error('client closed'));
      const pending: Pending = { request, resolve, reject };
      const session = this.idle.pop();
      if (session) this.send(session, pending);
      else if (this.open < this.maxSockets) this.connect(pending);
      else this.waiting.push(pending);
    });
  }

  close(): void {
    this.closed = true;
    for (const s of this.idle.splice(0)) s.socket.destroy();
    for (const p of this.waiting.splice(0)) p.reject(new Error('client closed'));
  }

  private connect(first: Pending): void {
    this.open++;
    const socket = net.connect({ host: this.host, port: this.port, noDelay: true });
    const session: Session = { socket, current: null, chunks: [], bytes: 0 };
    socket.on('data', (chunk: Buffer) => this.onData(session, chunk));
    let failure: Error | undefined;
    socket.on('error', (err) => (failure = err)); // 'close' follows
    socket.once('close', () => {
      this.open--;
      const at = this.idle.indexOf(session);
      if (at >= 0) this.idle.splice(at, 1);
      const lost = session.current;
      session.current = null;
      lost?.reject(failure ?? new Error('connection closed before the answer'));
      this.next();
    });
    this.send(session, first);
  }

  private send(session: Session, pending: Pending): void {
    session.current = pending;
    session.chunks = [];
    session.bytes = 0;
    session.socket.write(pending.request);
  }

  private onData(session: Session, chunk: Buffer): void {
    if (!session.current) return; // an answer nobody asked for: ignored
    session.chunks.push(chunk);
    session.bytes += chunk.length;
    const data = session.chunks.length === 1 ? chunk : Buffer.concat(session.chunks, session.bytes);
    session.chunks = [data];
    const end = data.indexOf(HEADER_END);
    if (end < 0) return;
    const head = data.toString('latin1', 0, end);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? NaN);
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    const pending = session.current;
    if (!Number.isFinite(status) || !length) {
      session.current = null;
      pending.reject(new Error(`an answer the bench's client does not read: ${head.slice(0, 200)}`));
      session.socket.destroy();
      return;
    }
    const total = end + HEADER_END.length + Number(length[1]);
    if (data.length < total) return;
    session.current = null;
    pending.resolve({ status, text: data.toString('utf8', end + HEADER_END.length, total) });
    if (/\r\nconnection:\s*close/i.test(head)) {
      session.socket.destroy();
      return;
    }
    const queued = this.waiting.shift();
    if (queued) this.send(session, queued);
    else this.idle.push(session);
  }

  /** A socket is gone: the next waiting request gets a new one. */
  private next(): void {
    if (this.closed || this.open >= this.maxSockets) return;
    const queued = this.waiting.shift();
    if (queued) this.connect(queued);
  }
}
