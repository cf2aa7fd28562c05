// The greeting pause (src/smtp/greet-pause.ts, the one place that overrides smtp-server's fixed 100 ms): the MX
// pauses MAIL_MX_GREET_PAUSE_MS for a client neither trusted nor passed, refuses one that talks meanwhile, remembers
// one that waited; trusted clients and every submission client are greeted at once. Clients come from different
// loopback addresses (127.0.0.x) to be different clients. What fails when an upgrade of smtp-server brings its own
// pause back: an untrusted client greeted at 100 ms, not after the pause; an early talker at 300 ms greeted instead
// of refused; no greeting "at once" of five under 100 ms.
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import t from 'tap';
import { FakeClock } from '../../src/core/clock.js';
import { GREET_PASS_MAX_CLIENTS, GREET_PASS_TTL_MS, PassedClients } from '../../src/smtp/greet-pause.js';
import { startTestApp } from '../helpers/app.js';

/** Far from smtp-server's own 100 ms, and long enough to tell apart from "at once" on a busy machine. */
const PAUSE_MS = 1500;
/** smtp-server's own pause: a greeting "at once" that never comes sooner is the library's. */
const LIBRARY_PAUSE_MS = 100;
/** An early talker talks after the library's pause and well inside ours. */
const EARLY_TALK_MS = 300;

interface Dialogue {
  /** Connect (or TLS handshake) → the first bytes from the server. */
  ms: number;
  /** Everything the server sent. */
  text: string;
}

/**
 * Connects from `from` (a 127.0.0.x address). By default reads the greeting, then EHLO and its answer; with
 * `talkAfterMs`, sends EHLO that long after connecting, greeted or not, and reads until its answer or a 421.
 */
async function dialogue(port: number, from: string, opts: { talkAfterMs?: number; implicitTls?: boolean } = {}): Promise<Dialogue> {
  const tcp = net.connect({ host: '127.0.0.1', port, localAddress: from });
  const socket = opts.implicitTls ? tls.connect({ socket: tcp, rejectUnauthorized: false }) : tcp;
  socket.setNoDelay(true);
  let text = '';
  let t0 = 0;
  let ms = -1;
  let talked = false;
  const talk = () => {
    if (talked) return;
    talked = true;
    socket.write('EHLO client.remote.test\r\n');
  };
  let timer: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve, reject) => {
    socket.once(opts.implicitTls ? 'secureConnect' : 'connect', () => {
      t0 = performance.now();
      if (opts.talkAfterMs !== undefined) timer = setTimeout(talk, opts.talkAfterMs);
    });
    socket.on('data', (d: Buffer) => {
      if (ms < 0) ms = performance.now() - t0;
      text += d.toString('latin1');
      if (opts.talkAfterMs === undefined && /\r\n$/.test(text)) talk();
      if (/^(250 |421 )/m.test(text)) resolve();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve());
  });
  clearTimeout(timer);
  socket.end('QUIT\r\n');
  socket.destroy();
  return { ms, text };
}

/** The fastest of five greetings (ms): under LIBRARY_PAUSE_MS only when the library's pause is not in the way. */
async function fastestGreeting(port: number, from: string, implicitTls = false): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < 5; i++) best = Math.min(best, (await dialogue(port, from, { implicitTls })).ms);
  return best;
}

t.test('the MX pauses for untrusted clients, remembers those that waited, refuses early talkers; submission never pauses', async (t) => {
  const app = await startTestApp(t, { config: { trustedNetworks: ['127.0.0.1/32'], mxGreetPauseMs: PAUSE_MS } });
  const { mx, submission, submissions } = app.appliance.ports;

  await t.test('a trusted client is greeted at once, and once', async (t) => {
    const d = await dialogue(mx.port, '127.0.0.1');
    t.match(d.text, /^220 [^\r\n]*\r\n250[ -]/, 'greeted, EHLO answered');
    t.equal(d.text.match(/^220 /gm)?.length, 1, 'one greeting');
    t.ok(d.ms < PAUSE_MS / 2, `greeted in ${d.ms.toFixed(0)} ms, not after the pause`);
    const best = await fastestGreeting(mx.port, '127.0.0.1');
    t.ok(best < LIBRARY_PAUSE_MS, `the fastest of five greetings took ${best.toFixed(1)} ms: not smtp-server's ${LIBRARY_PAUSE_MS} ms`);
  });

  await t.test('an untrusted client waits the pause, and is greeted at once next time', async (t) => {
    const first = await dialogue(mx.port, '127.0.0.2');
    t.match(first.text, /^220 [^\r\n]*\r\n250[ -]/, 'greeted, EHLO answered');
    t.ok(first.ms >= PAUSE_MS - 20, `first greeting after ${first.ms.toFixed(0)} ms (pause ${PAUSE_MS})`);
    const again = await dialogue(mx.port, '127.0.0.2');
    t.ok(again.ms < PAUSE_MS / 2, `then greeted in ${again.ms.toFixed(0)} ms`);
    t.match(again.text, /^220 [^\r\n]*\r\n250[ -]/, 'greeted, EHLO answered');
  });

  await t.test('an untrusted client that talks during the pause is refused and not remembered', async (t) => {
    const early = await dialogue(mx.port, '127.0.0.3', { talkAfterMs: EARLY_TALK_MS });
    t.match(early.text, /^421 .*talk too soon/m, `refused 421 for talking ${EARLY_TALK_MS} ms after connecting`);
    t.notMatch(early.text, /^220 /m, 'never greeted');
    const next = await dialogue(mx.port, '127.0.0.3');
    t.ok(next.ms >= PAUSE_MS - 20, `its next connection waits the pause again (${next.ms.toFixed(0)} ms)`);
  });

  await t.test('submission greets an untrusted client at once, plain and implicit TLS', async (t) => {
    for (const [name, port, implicitTls] of [['submission', submission.port, false], ['submissions', submissions.port, true]] as const) {
      const d = await dialogue(port, '127.0.0.4', { implicitTls });
      t.match(d.text, /^220 [^\r\n]*\r\n250[ -]/, `${name}: greeted, EHLO answered`);
      const best = await fastestGreeting(port, '127.0.0.4', implicitTls);
      t.ok(best < LIBRARY_PAUSE_MS, `${name}: the fastest of five greetings took ${best.toFixed(1)} ms`);
    }
  });
});

t.test('MAIL_MX_GREET_PAUSE_MS=0 greets every MX client at once', async (t) => {
  const app = await startTestApp(t, { config: { trustedNetworks: [], mxGreetPauseMs: 0 } });
  const best = await fastestGreeting(app.appliance.ports.mx.port, '127.0.0.5');
  t.ok(best < LIBRARY_PAUSE_MS, `an untrusted client: the fastest of five greetings took ${best.toFixed(1)} ms`);
});

t.test('PassedClients: remembered for a day, at most GREET_PASS_MAX_CLIENTS, oldest forgotten first', async (t) => {
  const clock = new FakeClock('2026-03-01T10:00:00Z');
  const passed = new PassedClients(clock);
  passed.remember('192.0.2.1');
  t.ok(passed.has('192.0.2.1'), 'remembered');
  t.notOk(passed.has('192.0.2.2'), 'another address is not');
  clock.advance(GREET_PASS_TTL_MS - 1);
  t.ok(passed.has('192.0.2.1'), 'still within the day');
  clock.advance(1);
  t.notOk(passed.has('192.0.2.1'), 'forgotten after a day');
  t.equal(passed.size, 0, 'and dropped');

  const small = new PassedClients(clock, GREET_PASS_TTL_MS, 3);
  for (const ip of ['192.0.2.1', '192.0.2.2', '192.0.2.3']) small.remember(ip);
  small.remember('192.0.2.1'); // passed again: now the newest
  small.remember('192.0.2.4');
  t.equal(small.size, 3, 'bounded');
  t.notOk(small.has('192.0.2.2'), 'the oldest pass forgotten');
  t.ok(small.has('192.0.2.1') && small.has('192.0.2.3') && small.has('192.0.2.4'), 'the others kept');
  t.ok(GREET_PASS_MAX_CLIENTS >= 1000, 'the default bound holds a busy MX\'s senders');
});
