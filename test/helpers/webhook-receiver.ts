// A webhook receiver for tests: a real HTTP server on loopback that records every request (raw body bytes
// and headers) and answers as told: a status (2xx, 406, 500, …), never ('timeout': holds the request until
// the client gives up), or by closing the socket ('close'). One-shot answers queue up before the default.
import http, { type IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';

export type Answer = number | 'timeout' | 'close';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received. */
  raw: Buffer;
  /** Parsed JSON body. */
  json: { type: string; created_at: string; data: Record<string, unknown> };
  /** How it was answered. */
  answer: Answer;
  /** Real time of arrival (ms), for the benchmark. */
  receivedAt: number;
}

export interface WebhookReceiver {
  url: string;
  port: number;
  /** Answer to every request not covered by `queue`. Default 200. */
  answer: Answer;
  /** Answers for the next requests, in order. */
  queue: Answer[];
  received: ReceivedRequest[];
  /** Requests answered with a 2xx. */
  readonly delivered: ReceivedRequest[];
  /** Called for each request as it arrives (the benchmark uses it). */
  onRequest?: (r: ReceivedRequest) => void;
  close(): Promise<void>;
}

export async function startWebhookReceiver(opts: { record?: boolean } = {}): Promise<WebhookReceiver> {
  const sockets = new Set<Socket>();
  const record = opts.record ?? true;
  const receiver: WebhookReceiver = {
    url: '',
    port: 0,
    answer: 200,
    queue: [],
    received: [],
    get delivered() {
      return this.received.filter((r) => typeof r.answer === 'number' && r.answer >= 200 && r.answer < 300);
    },
    close: async () => undefined,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const answer = receiver.queue.length > 0 ? receiver.queue.shift()! : receiver.answer;
      let json: ReceivedRequest['json'];
      try {
        json = JSON.parse(raw.toString('utf8')) as ReceivedRequest['json'];
      } catch {
        json = { type: '(not json)', created_at: '', data: {} };
      }
      const entry: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw, json, answer, receivedAt: Date.now() };
      if (record) receiver.received.push(entry);
      receiver.onRequest?.(entry);
      if (answer === 'timeout') return; // never answered; the client's deadline ends it
      if (answer === 'close') return req.socket.destroy();
      res.writeHead(answer, { 'content-type': 'text/plain' });
      res.end(answer >= 200 && answer < 300 ? 'ok' : `answered ${answer}`);
    });
  });
  server.keepAliveTimeout = 30_000;
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.address() as { port: number }).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hooks`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return receiver;
}
