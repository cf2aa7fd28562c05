// What one client may hold of a listener, so that one abusive peer cannot take the service away from the
// others: sockets at once (all clients together and per client address), and bytes of message data held in
// memory at once. A client address is an IPv4 address, or the /64 of an IPv6 one (a subscriber usually holds a
// whole /64, so counting single IPv6 addresses would not limit anyone).
import net from 'node:net';
import type tls from 'node:tls';
import { ipv6Bytes } from './ip.js';

export interface ConnectionCapLimits {
  /** Sockets at once, all clients together. */
  total: number;
  /** Sockets at once from one client address. */
  perClient: number;
}

export type CapRefusal = 'total' | 'per-client';

/** The address a client is counted under: IPv4 as it is (also when v4-mapped), IPv6 by its /64. */
export function clientKey(address: string | undefined): string {
  const a = (address ?? '').replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  if (mapped) return mapped[1]!;
  if (net.isIPv6(a)) {
    const b = ipv6Bytes(a);
    const groups = [0, 2, 4, 6].map((i) => ((b[i]! << 8) | b[i + 1]!).toString(16));
    return `${groups.join(':')}::/64`;
  }
  return a;
}

/** Counts sockets in (until they close) under a total and a per-client cap. One object may serve several listeners. */
export class ConnectionCaps {
  /** One unit per open socket. */
  private readonly tally: ByteBudget;

  constructor(readonly limits: ConnectionCapLimits) {
    this.tally = new ByteBudget(limits.total, limits.perClient);
  }

  /** Sockets counted in now. */
  get size(): number {
    return this.tally.inUse;
  }

  /**
   * Counts the socket in until it closes, or says which cap refuses it (then nothing is counted). `perClient`, when
   * given and lower, stands for the per-client cap (a listener under stress).
   */
  admit(socket: net.Socket, perClient = this.limits.perClient): CapRefusal | null {
    const client = socket.remoteAddress ?? '';
    if (this.tally.inUse >= this.limits.total) return 'total';
    if (!this.tally.reserve(client, 1, perClient)) return 'per-client';
    onceClosed(socket, () => this.tally.release(client, 1));
    return null;
  }
}

/**
 * A listener is under stress (Postfix's STRESS, postconf(5) and anvil(8)) once its open sockets reach this share
 * of its capacity, and stays so until they fall below STRESS_LEAVE_SHARE (the gap keeps it from flapping at the
 * edge). Under stress it shortens its timeouts and tolerates fewer errors, so that peers holding sessions they do
 * not use are shed and those that talk get in.
 */
export const STRESS_ENTER_SHARE = 0.8;
export const STRESS_LEAVE_SHARE = 0.6;
/**
 * Under stress a client address may open no more sockets once it holds this share of the capacity (at least one):
 * 10 of 500. Shed sessions are then not taken back at once by the peers that held them (they reconnect faster than
 * anyone else), so the room they leave goes to others: to fill a listener under stress takes 1 / share addresses
 * (50), not capacity / per-client cap (10).
 */
export const STRESS_CLIENT_SHARE = 0.02;

/** Counts one listener's sockets (until they close) against its capacity, and says when stress starts and ends. */
export class StressGauge {
  private open = 0;
  private on = false;

  constructor(
    readonly capacity: number,
    private readonly onChange: (stressed: boolean, open: number) => void,
  ) {}

  get stressed(): boolean {
    return this.on;
  }

  /** The per-client cap while under stress. */
  get perClientUnderStress(): number {
    return Math.max(1, Math.floor(this.capacity * STRESS_CLIENT_SHARE));
  }

  /** Sockets counted in now. */
  get size(): number {
    return this.open;
  }

  /** Counts the socket in until it closes. */
  track(socket: net.Socket): void {
    this.open++;
    onceClosed(socket, () => {
      this.open--;
      this.update();
    });
    this.update();
  }

  private update(): void {
    if (!this.on && this.open >= this.capacity * STRESS_ENTER_SHARE) {
      this.on = true;
      this.onChange(true, this.open);
    } else if (this.on && this.open < this.capacity * STRESS_LEAVE_SHARE) {
      this.on = false;
      this.onChange(false, this.open);
    }
  }
}

/**
 * Calls `fn` once when `socket` closes, also when its owner strips the socket's listeners on the way: smtp-server's
 * STARTTLS calls `removeAllListeners()` on the plain socket before wrapping it in TLS, and POP3's STLS removes its
 * 'close' listeners. The plain socket still emits 'close' when the connection ends (the TLS socket on it closes
 * it), but to nobody: every session that had used STARTTLS kept its place in the caps and the stress gauge for
 * good, and after 50 encrypted deliveries from one MTA the MX refused it (found by a black-box audit with Postfix).
 */
export function onceClosed(socket: net.Socket, fn: () => void): void {
  let done = false;
  const call = () => {
    if (done) return;
    done = true;
    fn();
  };
  socket.once('close', call);
  const strip = socket.removeAllListeners;
  // With its arity kept: EventEmitter tells "every event" from one named `undefined` by the argument count.
  socket.removeAllListeners = function (this: net.Socket, ...event: [eventName?: string | symbol]) {
    strip.apply(this, event);
    if (!done && (event.length === 0 || event[0] === 'close')) this.once('close', call);
    return this;
  };
}

/**
 * Puts `caps` in front of a server's own connection handling: every accepted socket is admitted first, and a
 * refused one goes to `refuse` and no further (the server never sees it). An admitted one is counted by `gauge`
 * (if given) before the server sees it; while the gauge says stress, the per-client cap is its lower one. Call it
 * once the server is built (its own 'connection' listeners are in place) and before it listens; works for net, tls
 * and http servers and for smtp-server's `server.server` (for a TLS server the socket is the raw one, before any
 * handshake).
 */
export function capConnections(server: net.Server, caps: ConnectionCaps, refuse: (socket: net.Socket, why: CapRefusal) => void, gauge?: StressGauge): void {
  const own = server.listeners('connection') as Array<(socket: net.Socket) => void>;
  server.removeAllListeners('connection');
  server.on('connection', (socket: net.Socket) => {
    const why = gauge?.stressed ? caps.admit(socket, gauge.perClientUnderStress) : caps.admit(socket);
    if (why === null) {
      gauge?.track(socket);
      for (const listener of own) listener.call(server, socket);
      return;
    }
    socket.on('error', () => {}); // a reset while refusing must not become an uncaught exception
    refuse(socket, why);
  });
}

/** Refuses a socket with one last line (a plaintext protocol's "go away"), closing it even if the peer does not read. */
export function refuseWith(line: string): (socket: net.Socket) => void {
  return (socket) => {
    socket.end(line);
    setTimeout(() => socket.destroy(), 1000).unref();
  };
}

/**
 * Ends the socket of every failed handshake on an implicit-TLS server. Node's `handshakeTimeout` only reports a
 * handshake that never finishes: without this, a client that connects and sends nothing holds its socket for ever.
 */
export function endFailedHandshakes(server: tls.Server, report: (err: Error) => void): void {
  server.on('tlsClientError', (err, socket) => {
    report(err);
    socket.destroy();
  });
}

/** Refuses a socket without a word (implicit TLS: nothing can be said before the handshake). */
export const refuseSilently = (socket: net.Socket): void => void socket.destroy();

/**
 * Bytes held in memory at once (message data being received), all clients together and per client address. A
 * reservation that would pass either figure is refused whole; what was reserved is given back by the holder.
 * (ConnectionCaps counts sockets with one, a unit each.)
 */
export class ByteBudget {
  private used = 0;
  private readonly byClient = new Map<string, number>();

  constructor(
    readonly total: number,
    readonly perClient: number,
  ) {}

  /** Bytes reserved now, all clients together. */
  get inUse(): number {
    return this.used;
  }

  /**
   * Reserves `n` bytes for the client's address: false (and nothing reserved) when a figure would be passed.
   * `perClient`, when given and lower, stands for the per-client figure.
   */
  reserve(client: string, n: number, perClient = this.perClient): boolean {
    const key = clientKey(client);
    const mine = this.byClient.get(key) ?? 0;
    if (this.used + n > this.total || mine + n > Math.min(perClient, this.perClient)) return false;
    this.used += n;
    this.byClient.set(key, mine + n);
    return true;
  }

  release(client: string, n: number): void {
    if (n <= 0) return;
    const key = clientKey(client);
    this.used = Math.max(0, this.used - n);
    const left = (this.byClient.get(key) ?? 0) - n;
    if (left <= 0) this.byClient.delete(key);
    else this.byClient.set(key, left);
  }
}

/** A message read under a ByteBudget (readBudgeted). */
export interface BudgetedMessage {
  raw: Buffer;
  /** Past `maxBytes` (or smtp-server's own size check): nothing of it is held. */
  tooBig: boolean;
  /** The budget refused it: its data was dropped as it came (answer "452 4.3.1 … try again later"). */
  noRoom: boolean;
  /** Bytes reserved in the budget for `raw`: the caller gives them back once done with it. */
  reserved: number;
}

/**
 * Reads an SMTP DATA stream, holding at most `maxBytes` and what `budget` grants the client; past either, what
 * was held is let go at once and the rest is read and dropped (the MX and submission).
 */
export async function readBudgeted(stream: AsyncIterable<Buffer> & { sizeExceeded?: boolean }, budget: ByteBudget, client: string, maxBytes: number): Promise<BudgetedMessage> {
  let chunks: Buffer[] = [];
  let size = 0;
  let reserved = 0;
  let noRoom = false;
  const letGo = () => {
    chunks = [];
    budget.release(client, reserved);
    reserved = 0;
  };
  try {
    for await (const chunk of stream) {
      size += chunk.length;
      if (noRoom || size > maxBytes) {
        if (reserved > 0) letGo();
      } else if (budget.reserve(client, chunk.length)) {
        reserved += chunk.length;
        chunks.push(chunk);
      } else {
        noRoom = true;
        letGo();
      }
    }
  } catch (err) {
    letGo();
    throw err;
  }
  const tooBig = Boolean(stream.sizeExceeded) || size > maxBytes;
  return { raw: Buffer.concat(chunks), tooBig, noRoom: noRoom && !tooBig, reserved };
}
