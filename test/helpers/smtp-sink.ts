// A remote MX (or relay) for tests: a real smtp-server on loopback that records every transaction and can
// be told, per recipient or per message, to accept, defer (4xx), reject (5xx), or drop the connection in the
// middle of DATA; it offers or withholds STARTTLS, can fail the TLS handshake, and can require AUTH.
// Replies are sent exactly as given (enhanced codes are part of the text, as real providers send them).
import type { Socket } from 'node:net';
import { generate } from 'selfsigned';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

/** A reply to send: `{ code: 550, text: '5.1.1 <x@y>: user unknown' }` goes out as "550 5.1.1 <x@y>: user unknown". */
export interface SinkReply {
  code: number;
  text: string;
}

export interface SinkTransaction {
  from: string;
  to: string[];
  /** The message bytes as received (dot-unstuffed). */
  raw: Buffer;
  /** The session was encrypted. */
  tls: boolean;
  /** AUTH user, when the client authenticated. */
  user?: string | undefined;
  /** Which connection (1-based, in accept order) carried it. */
  connection: number;
  /** EHLO/HELO name the client gave. */
  helo: string;
  /** The client's address (the source address of its connection). */
  remoteAddress: string;
  /** The sink accepted it (250) rather than refusing it at the end of DATA. */
  accepted: boolean;
}

export interface SinkOptions {
  /** Loopback address to listen on (127.0.0.x lets several sinks share one port). Default 127.0.0.1. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** Advertise STARTTLS (default true). */
  starttls?: boolean;
  /** Advertise STARTTLS, answer 220, then fail the handshake (the server demands a client certificate). */
  brokenTls?: boolean;
  /** Require AUTH with these credentials before MAIL FROM. */
  auth?: { user: string; pass: string };
  /** Refuse every session at the greeting with this reply. */
  greeting?: SinkReply;
  /** Advertise this SIZE limit (RFC 1870) and refuse larger messages. */
  size?: number;
  /** Recipients per transaction, as Postfix's smtpd_recipient_limit: past it RCPT answers 452 4.5.3. */
  recipientLimit?: number;
  /** Sessions at once, as many servers allow one client: past it the greeting is 421 4.7.0. */
  maxSessions?: number;
  /** The server drops a session idle this long (ms; smtp-server's default otherwise). */
  socketTimeout?: number;
}

export interface SmtpSink {
  host: string;
  port: number;
  /** Every message whose DATA was received in full, accepted or not. */
  transactions: SinkTransaction[];
  /** Messages accepted. */
  readonly accepted: SinkTransaction[];
  /** TCP connections accepted so far. */
  connections: number;
  /** Failed AUTH attempts. */
  authFailures: number;
  /** Replies to RCPT TO per (lower-cased) address; absent: 250. */
  recipients: Map<string, SinkReply>;
  /** Reply to MAIL FROM; null: 250. */
  mailFrom: SinkReply | null;
  /** What happens at the end of DATA: a reply, 'drop' (cut the connection once the body starts), null: 250. */
  message: SinkReply | 'drop' | null;
  /** Cuts every open connection (as a server ending idle sessions would, minus the courtesy). */
  dropConnections(): void;
  /** Resolves once no connection is open. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

let tlsMaterial: Promise<{ key: string; cert: string }> | undefined;

/** One self-signed certificate per test process (RSA key generation is slow). */
export function sinkTlsMaterial(): Promise<{ key: string; cert: string }> {
  tlsMaterial ??= generate([{ name: 'commonName', value: 'localhost' }], { keySize: 2048 }).then((p) => ({ key: p.private, cert: p.cert }));
  return tlsMaterial;
}

const smtpError = (reply: SinkReply) => Object.assign(new Error(reply.text), { responseCode: reply.code });

export async function startSmtpSink(options: SinkOptions = {}): Promise<SmtpSink> {
  const host = options.host ?? '127.0.0.1';
  const offerTls = options.starttls !== false || options.brokenTls === true;
  const { key, cert } = await sinkTlsMaterial();
  const sockets = new Map<number, Socket>();
  const connectionOf = new Map<string, number>();
  /** Sessions let in and not yet closed (for `maxSessions`). */
  const admitted = new Set<string>();
  const idleWaiters: Array<() => void> = [];

  const sink: SmtpSink = {
    host,
    port: 0,
    transactions: [],
    get accepted() {
      return this.transactions.filter((t) => t.accepted);
    },
    connections: 0,
    authFailures: 0,
    recipients: new Map(),
    mailFrom: null,
    message: null,
    dropConnections() {
      for (const socket of sockets.values()) socket.destroy();
    },
    idle() {
      if (sockets.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    close: async () => undefined,
  };

  const disabled: string[] = [];
  if (!offerTls) disabled.push('STARTTLS');
  if (!options.auth) disabled.push('AUTH');

  const serverOptions: SMTPServerOptions = {
    secure: false,
    key,
    cert,
    name: 'sink.test',
    logger: false,
    disableReverseLookup: true,
    hideENHANCEDSTATUSCODES: true,
    disabledCommands: disabled,
    authOptional: !options.auth,
    allowInsecureAuth: true,
    ...(options.size ? { size: options.size } : {}),
    ...(options.socketTimeout ? { socketTimeout: options.socketTimeout } : {}),
    // The handshake fails: TLS 1.2 only and a client certificate demanded, which an MTA never has.
    ...(options.brokenTls ? { requestCert: true, rejectUnauthorized: true, maxVersion: 'TLSv1.2' as const } : {}),
    onConnect(session, callback) {
      sink.connections++;
      connectionOf.set(session.id, sink.connections);
      if (options.maxSessions !== undefined) {
        if (admitted.size >= options.maxSessions) return callback(smtpError({ code: 421, text: '4.7.0 Too many connections from your host' }));
        admitted.add(session.id);
      }
      callback(options.greeting ? smtpError(options.greeting) : null);
    },
    onClose(session) {
      admitted.delete(session.id);
    },
    onAuth(auth, _session, callback) {
      if (options.auth && auth.username === options.auth.user && auth.password === options.auth.pass) return callback(null, { user: auth.username });
      sink.authFailures++;
      callback(smtpError({ code: 535, text: '5.7.8 Authentication credentials invalid' }));
    },
    onMailFrom(_address, _session, callback) {
      callback(sink.mailFrom ? smtpError(sink.mailFrom) : null);
    },
    onRcptTo(address, session, callback) {
      if (options.recipientLimit !== undefined && session.envelope.rcptTo.length >= options.recipientLimit) {
        return callback(smtpError({ code: 452, text: '4.5.3 Error: too many recipients' }));
      }
      const reply = sink.recipients.get(address.address.toLowerCase());
      callback(reply && reply.code >= 400 ? smtpError(reply) : null);
    },
    onData(stream, session, callback) {
      const verdict = sink.message;
      const chunks: Buffer[] = [];
      if (verdict === 'drop') {
        stream.once('data', () => sockets.get(session.remotePort)?.destroy());
      }
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (verdict === 'drop') return;
        const refused = verdict && verdict.code >= 400 ? verdict : null;
        sink.transactions.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
          tls: session.secure,
          user: session.user as string | undefined,
          connection: connectionOf.get(session.id) ?? 0,
          helo: session.hostNameAppearsAs,
          remoteAddress: session.remoteAddress,
          accepted: !refused,
        });
        // A queue id per message, as real MTAs answer: the replies of two transactions differ.
        callback(refused ? smtpError(refused) : null, `Ok: queued as Q${sink.transactions.length}`);
      });
    },
  };

  const server = new SMTPServer(serverOptions);
  server.server.on('connection', (socket: Socket) => {
    const port = socket.remotePort;
    if (port === undefined) return;
    sockets.set(port, socket);
    socket.once('close', () => {
      sockets.delete(port);
      if (sockets.size === 0) idleWaiters.splice(0).forEach((resolve) => resolve());
    });
  });
  server.on('error', () => undefined); // a client vanishing mid-session is part of the tests

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  sink.port = (server.server.address() as { port: number }).port;
  sink.close = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets.values()) socket.destroy();
      server.close(() => resolve());
    });
  return sink;
}
