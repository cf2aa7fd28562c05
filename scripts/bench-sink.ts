// A lean SMTP sink MX for bench-send: the "remote internet" of the benchmark, which shares the machine's two
// cores with the appliance it measures. smtp-server (the MX of the appliance itself, and bench-send's sink
// until now) spends ~0.2–0.27 ms of CPU per message (its command parser, a Transform stream for the DATA
// dot-unstuffing, a hook per command, per-session bookkeeping): a tenth of the machine at 800 messages a
// second, taken from the appliance under test. A remote MX runs on someone else's machine; this one does the
// least a real MX must do for the client to behave as it would against one:
//
//   220 greeting; EHLO (PIPELINING, 8BITMIME, SMTPUTF8, SIZE, ENHANCEDSTATUSCODES, STARTTLS) and HELO;
//   STARTTLS (a real TLS handshake and an encrypted session, RFC 3207: the EHLO state is reset);
//   MAIL FROM, RCPT TO, DATA with the message read to its "<CRLF>.<CRLF>", RSET, NOOP, QUIT;
//   pipelined commands answered in order (RFC 2920); 503 for commands out of sequence, 500 for unknown ones.
//
// What it keeps of a message: its size and the Message-ID of its header (to count duplicates); the body is
// discarded. It does not unstuff dots: only the byte count would change.
import net from 'node:net';
import tls from 'node:tls';

export interface LeanSinkOptions {
  key: string;
  cert: string;
  /** Offer STARTTLS. */
  tls: boolean;
  name: string;
  /** Called once per message accepted (250 after DATA), with its Message-ID (undefined when it has none) and size. */
  onMessage(messageId: string | undefined, bytes: number): void;
  onConnect?(): void;
}

export interface LeanSink {
  port: number;
  close(): Promise<void>;
}

const END_OF_DATA = Buffer.from('\r\n.\r\n');
/** A message whose header has not ended after this many bytes is counted without a Message-ID. */
const MAX_HEADER = 64 * 1024;
/** A command line longer than this is refused and the session closed (no client of ours sends one). */
const MAX_LINE = 4096;

/** The Message-ID of a message's header (latin1), copied: the match is a slice that would keep the whole header alive. */
export function messageIdOf(header: string): string | undefined {
  const match = /^message-id:[ \t]*(<[^>\r\n]+>)/im.exec(header)?.[1];
  return match && Buffer.from(match, 'latin1').toString('latin1');
}

export async function startLeanSink(opts: LeanSinkOptions): Promise<LeanSink> {
  const secureContext = tls.createSecureContext({ key: opts.key, cert: opts.cert });
  const ehlo = (secure: boolean) =>
    [`250-${opts.name}`, '250-PIPELINING', '250-8BITMIME', '250-SMTPUTF8', '250-ENHANCEDSTATUSCODES', '250-SIZE 52428800', ...(opts.tls && !secure ? ['250-STARTTLS'] : []), '250 HELP']
      .join('\r\n') + '\r\n';

  const sockets = new Set<net.Socket>();
  const server = net.createServer((raw) => {
    sockets.add(raw);
    raw.on('close', () => sockets.delete(raw));
    raw.on('error', () => undefined);
    raw.setNoDelay(true);
    opts.onConnect?.();
    serve(raw, false);
    raw.write(`220 ${opts.name} ESMTP lean sink\r\n`);
  });

  function serve(socket: net.Socket | tls.TLSSocket, secure: boolean): void {
    let greeted = false;
    let mailFrom = false;
    let recipients = 0;
    /** Reading a message: its bytes so far (header kept until it ends, to find the Message-ID). */
    let data: { bytes: number; header: string | null; messageId: string | undefined; tail: Buffer } | null = null;
    let pending = Buffer.alloc(0);
    let replies = '';

    const flush = () => {
      if (replies) socket.write(replies);
      replies = '';
    };
    const reply = (line: string) => {
      replies += `${line}\r\n`;
    };

    /** Consumes message bytes; returns the offset after the end of DATA in `chunk`, or -1 if it is not in it. */
    const readData = (chunk: Buffer): number => {
      const d = data!;
      // The terminator may straddle chunks: search the last 4 bytes of the previous chunk with this one.
      const joined = d.tail.length ? Buffer.concat([d.tail, chunk]) : chunk;
      const at = joined.indexOf(END_OF_DATA);
      const end = at >= 0 ? at + END_OF_DATA.length - d.tail.length : -1;
      const body = end >= 0 ? chunk.subarray(0, Math.max(0, end)) : chunk;
      d.bytes += body.length;
      if (d.header !== null) {
        d.header += body.toString('latin1');
        const headerEnd = d.header.indexOf('\r\n\r\n');
        if (headerEnd >= 0 || d.header.length > MAX_HEADER || end >= 0) {
          d.messageId = messageIdOf(headerEnd >= 0 ? d.header.slice(0, headerEnd) : d.header);
          d.header = null;
        }
      }
      d.tail = Buffer.from(joined.subarray(Math.max(0, joined.length - (END_OF_DATA.length - 1))));
      return end;
    };

    const command = (line: string): 'starttls' | 'quit' | undefined => {
      const verb = line.slice(0, 4).toUpperCase();
      switch (verb) {
        case 'EHLO':
          greeted = true;
          mailFrom = false;
          recipients = 0;
          replies += ehlo(secure);
          return;
        case 'HELO':
          greeted = true;
          reply(`250 ${opts.name}`);
          return;
        case 'STAR':
          if (!opts.tls || secure || line.toUpperCase() !== 'STARTTLS') return reply('500 5.5.1 Unknown command'), undefined;
          reply('220 2.0.0 Ready to start TLS');
          return 'starttls';
        case 'MAIL':
          if (!greeted) return reply('503 5.5.1 Say EHLO first'), undefined;
          if (mailFrom) return reply('503 5.5.1 Nested MAIL command'), undefined;
          mailFrom = true;
          recipients = 0;
          reply('250 2.1.0 Ok');
          return;
        case 'RCPT':
          if (!mailFrom) return reply('503 5.5.1 Need MAIL command'), undefined;
          recipients++;
          reply('250 2.1.5 Ok');
          return;
        case 'DATA':
          if (!mailFrom || recipients === 0) return reply('503 5.5.1 Need RCPT command'), undefined;
          // The CRLF that ended the DATA line counts as the one before an immediate "." (an empty message).
          data = { bytes: 0, header: '', messageId: undefined, tail: Buffer.from('\r\n') };
          reply('354 End data with <CR><LF>.<CR><LF>');
          return;
        case 'RSET':
          mailFrom = false;
          recipients = 0;
          reply('250 2.0.0 Ok');
          return;
        case 'NOOP':
          reply('250 2.0.0 Ok');
          return;
        case 'QUIT':
          reply('221 2.0.0 Bye');
          return 'quit';
        default:
          reply('500 5.5.1 Unknown command');
      }
    };

    const onData = (chunk: Buffer): void => {
      let buf = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      pending = Buffer.alloc(0);
      while (buf.length) {
        if (data) {
          const end = readData(buf);
          if (end < 0) break;
          opts.onMessage(data.messageId, data.bytes);
          data = null;
          mailFrom = false;
          recipients = 0;
          reply('250 2.0.0 Ok: queued');
          buf = buf.subarray(end);
          continue;
        }
        const eol = buf.indexOf('\r\n');
        if (eol < 0) {
          if (buf.length > MAX_LINE) {
            reply('500 5.5.2 Line too long');
            flush();
            socket.end();
            return;
          }
          pending = Buffer.from(buf);
          break;
        }
        const line = buf.toString('latin1', 0, eol);
        buf = buf.subarray(eol + 2);
        const next = command(line);
        if (next === 'quit') {
          flush();
          socket.end();
          return;
        }
        if (next === 'starttls') {
          // Nothing may follow STARTTLS in the same flight (RFC 3207 §4.2 / the STARTTLS injection bugs).
          flush();
          socket.off('data', onData);
          const secured = new tls.TLSSocket(socket, { isServer: true, secureContext });
          secured.on('error', () => socket.destroy());
          secured.once('secure', () => serve(secured, true));
          return;
        }
      }
      flush();
    };
    socket.on('data', onData);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
