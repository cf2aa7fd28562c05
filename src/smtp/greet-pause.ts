// When an SMTP session is greeted. smtp-server waits a fixed 100 ms before every greeting (SMTPConnection.init():
// `setTimeout(() => this.connectionReady(), 100)`) and answers a client that talks meanwhile 421 "You talk too
// soon". That pause is a pregreet test (Postfix postscreen's greet wait) worth having on the MX against bots that do
// not wait for the greeting, but it cost every sender 100 ms per connection, and every submission client too. It
// has no option, so this is the one place that overrides it: each session's `connectionReady` (looked up on the
// connection when the library's timer fires) is shadowed by a no-op, and the original is called at the time chosen
// here: at once, or after the pause. smtp-server's early-talker check (`_ready` false until then) is kept. The MX
// pauses for clients neither on MAIL_TRUSTED_NETWORKS nor passed recently (PassedClients); submission never does.
// test/inbound/greet-pause.test.ts fails if an upgrade of smtp-server breaks this.
import type net from 'node:net';
import type { SMTPServer } from 'smtp-server';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { NetworkList } from '../core/trusted-networks.js';
import { eachConnection } from './listener-guard.js';

/** How long a client that waited for its greeting is greeted at once on its next connections (postscreen: 1 day). */
export const GREET_PASS_TTL_MS = 24 * 60 * 60 * 1000;
/** Client addresses remembered as passed; past this the oldest is forgotten (it pauses again next time). */
export const GREET_PASS_MAX_CLIENTS = 10_000;

/** The parts of smtp-server's connection object used here (its .d.ts does not declare them). */
interface GreetingInternals {
  _socket: net.Socket;
  /** Normalised by smtp-server (an IPv4-mapped address as plain IPv4). */
  remoteAddress: string;
  _closing: boolean;
  _closed: boolean;
  /** Runs onConnect and sends the greeting; until then smtp-server refuses a command as an early talk. */
  connectionReady(next?: () => void): void;
}

/** Clients (by IP address) that waited for their greeting without talking, each remembered for GREET_PASS_TTL_MS. */
export class PassedClients {
  /** Address → until when (ms since the epoch), oldest pass first. */
  private readonly until = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs = GREET_PASS_TTL_MS,
    private readonly maxClients = GREET_PASS_MAX_CLIENTS,
  ) {}

  get size(): number {
    return this.until.size;
  }

  has(ip: string): boolean {
    const until = this.until.get(ip);
    if (until === undefined) return false;
    if (until > this.clock.now().getTime()) return true;
    this.until.delete(ip);
    return false;
  }

  remember(ip: string): void {
    this.until.delete(ip); // to the end: the newest pass
    this.until.set(ip, this.clock.now().getTime() + this.ttlMs);
    if (this.until.size > this.maxClients) this.until.delete(this.until.keys().next().value!);
  }
}

export interface GreetPolicy {
  /** Milliseconds to wait before greeting this client (0: at once). */
  pauseFor(remoteAddress: string): number;
  /** The client waited the whole pause without talking. */
  passed(remoteAddress: string): void;
}

/** Submission's policy: every client greeted at once (authenticated users; nothing to test them for). */
export const GREET_AT_ONCE: GreetPolicy = { pauseFor: () => 0, passed: () => undefined };

/** The MX's policy: `pauseMs` for a client neither trusted nor passed recently, none for the others. */
export function mxGreetPolicy(pauseMs: number, trusted: NetworkList, passedClients: PassedClients): GreetPolicy {
  return {
    pauseFor: (ip) => (pauseMs <= 0 || trusted.contains(ip) || passedClients.has(ip) ? 0 : pauseMs),
    passed: (ip) => passedClients.remember(ip),
  };
}

/** Greets each session of `server` when `policy` says, in place of smtp-server's fixed 100 ms. Call before it listens. */
export function controlGreeting(server: SMTPServer, policy: GreetPolicy, log: Logger): void {
  let warned = false;
  eachConnection<GreetingInternals>(server, (connection) => {
    const ready = connection.connectionReady;
    if (typeof ready !== 'function') {
      // An smtp-server that no longer works this way keeps its own pause; the tests say so before a release does.
      if (!warned) log.error('smtp-server has no connectionReady: the greeting pause is the library\'s own');
      warned = true;
      return;
    }
    connection.connectionReady = () => undefined; // the library's timer, when it fires, does nothing
    const greet = () => {
      if (!connection._closing && !connection._closed) ready.call(connection);
    };
    const pause = policy.pauseFor(connection.remoteAddress);
    if (pause <= 0) return greet();
    const timer = setTimeout(() => {
      // A client that talked meanwhile was answered 421 and is closing: it did not pass.
      if (connection._closing || connection._closed) return;
      policy.passed(connection.remoteAddress);
      greet();
    }, pause);
    timer.unref();
    connection._socket.once('close', () => clearTimeout(timer));
  });
}
