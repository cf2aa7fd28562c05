// The typed configuration: config/default.json, MAIL_* overrides, validation naming the variable.
import t, { type Test } from 'tap';
import os from 'node:os';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { CONFIG_ENV, ConfigError, loadConfig, parseDnsServer, type Config } from '../../src/config.js';

const defaultsFile = JSON.parse(readFileSync(new URL('../../config/default.json', import.meta.url), 'utf8')) as Record<string, unknown>;

/** loadConfig with only the given variables (the test process's own environment never leaks in). */
const load = (env: Record<string, string> = {}) => loadConfig(env);

function configError(t: Test, env: Record<string, string>): ConfigError | undefined {
  try {
    load(env);
  } catch (err) {
    t.ok(err instanceof ConfigError, `${JSON.stringify(env)}: ConfigError`);
    t.equal((err as Error).name, 'ConfigError');
    return err as ConfigError;
  }
  t.fail(`${JSON.stringify(env)} should be refused`);
  return undefined;
}

t.test('defaults come from config/default.json', async (t) => {
  const c = load();
  t.equal(c.apiPort, 3000);
  t.equal(c.mxPort, 2525);
  t.equal(c.submissionPort, 2587);
  t.equal(c.submissionsPort, 2465);
  t.equal(c.imapPort, 2143);
  t.equal(c.imapsPort, 2993);
  t.equal(c.pop3Port, 2110);
  t.equal(c.pop3sPort, 2995);
  t.equal(c.outboundPort, 25);
  t.equal(c.bind, '0.0.0.0');
  t.equal(c.defaultPlan, 'enterprise');
  t.equal(c.logLevel, 'info');
  t.same(c.dnsServers, [], 'empty: the system resolvers');
  t.equal(c.relayUrl, null);
  t.equal(c.tlsCert, null);
  t.equal(c.tlsKey, null);
  t.equal(c.bootstrapApiKey, null);
  t.ok(path.isAbsolute(c.dataDir), 'dataDir is absolute');
  t.equal(c.dataDir, path.resolve('./data'), 'dataDir is ./data resolved');
  t.equal(c.hostname, os.hostname().toLowerCase().replace(/\.$/, ''), 'hostname: the machine name');
  t.equal(defaultsFile.apiPort, 3000, 'the defaults file is the source');
  for (const key of Object.keys(CONFIG_ENV)) t.ok(key in defaultsFile, `config/default.json has ${key}`);
});

t.test('every variable overrides its default', async (t) => {
  const portVars: Array<[keyof Config, string]> = [
    ['apiPort', 'MAIL_API_PORT'],
    ['mxPort', 'MAIL_MX_PORT'],
    ['submissionPort', 'MAIL_SUBMISSION_PORT'],
    ['submissionsPort', 'MAIL_SUBMISSIONS_PORT'],
    ['imapPort', 'MAIL_IMAP_PORT'],
    ['imapsPort', 'MAIL_IMAPS_PORT'],
    ['pop3Port', 'MAIL_POP3_PORT'],
    ['pop3sPort', 'MAIL_POP3S_PORT'],
  ];
  for (const [key, env] of portVars) {
    t.equal(CONFIG_ENV[key], env, `${key} is ${env}`);
    t.equal(load({ [env]: '4321' })[key], 4321, `${env}=4321`);
    t.equal(load({ [env]: '0' })[key], 0, `${env}=0 picks a free port`);
    t.equal(load({ [env]: '65535' })[key], 65535, `${env}=65535`);
  }
  t.equal(load({ MAIL_OUTBOUND_PORT: '2526' }).outboundPort, 2526);
  t.equal(load({ MAIL_DATA_DIR: '/tmp/somewhere/else' }).dataDir, '/tmp/somewhere/else');
  t.equal(load({ MAIL_DATA_DIR: 'rel/dir' }).dataDir, path.resolve('rel/dir'), 'a relative data dir is made absolute');
  t.equal(load({ MAIL_HOSTNAME: 'MX.Example.COM' }).hostname, 'mx.example.com', 'hostname lower-cased');
  t.equal(load({ MAIL_BIND: '127.0.0.1' }).bind, '127.0.0.1');
  t.equal(load({ MAIL_BIND: '::' }).bind, '::');
  for (const plan of ['free', 'starter', 'pro', 'scale', 'enterprise'] as const) {
    t.equal(load({ MAIL_DEFAULT_PLAN: plan }).defaultPlan, plan);
  }
  for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const) {
    t.equal(load({ MAIL_LOG_LEVEL: level }).logLevel, level);
  }
  t.equal(load({ MAIL_RELAY_URL: 'smtp://user:pass@relay.example.com:587' }).relayUrl, 'smtp://user:pass@relay.example.com:587');
  t.equal(load({ MAIL_RELAY_URL: 'smtps://relay.example.com' }).relayUrl, 'smtps://relay.example.com');
  t.equal(load({ MAIL_RELAY_URL: '' }).relayUrl, null, 'empty means none');
  const tls = load({ MAIL_TLS_CERT: '/etc/tls/cert.pem', MAIL_TLS_KEY: '/etc/tls/key.pem' });
  t.equal(tls.tlsCert, '/etc/tls/cert.pem');
  t.equal(tls.tlsKey, '/etc/tls/key.pem');
  const key = 'sk_live_abcdefghijklmnopqrstuvwx';
  t.equal(load({ MAIL_BOOTSTRAP_API_KEY: key }).bootstrapApiKey, key);
  t.equal(load({ MAIL_BOOTSTRAP_API_KEY: 'sk_test_ABCDEFGHIJKLMNOP' }).bootstrapApiKey, 'sk_test_ABCDEFGHIJKLMNOP');
  t.equal(load({ MAIL_BOOTSTRAP_API_KEY: '' }).bootstrapApiKey, null, 'empty means none');
  t.equal(load({ MAIL_DNS_TIMEOUT_MS: '2500' }).dnsTimeoutMs, 2500);
  t.equal(load().inboundAuthThreads, 1, 'one mailauth thread by default');
  t.equal(load({ MAIL_INBOUND_AUTH_THREADS: '0' }).inboundAuthThreads, 0, '0: checks on the main thread');
  t.equal(load({ MAIL_INBOUND_AUTH_THREADS: '4' }).inboundAuthThreads, 4);
  for (const v of ['17', '-1', 'two', '1.5']) t.throws(() => load({ MAIL_INBOUND_AUTH_THREADS: v }), { message: /MAIL_INBOUND_AUTH_THREADS/ }, `MAIL_INBOUND_AUTH_THREADS=${v} refused`);
  t.equal(load().renderThreadNice, 0, 'render threads at the process priority by default');
  t.equal(load({ MAIL_RENDER_THREAD_NICE: '10' }).renderThreadNice, 10);
  for (const v of ['20', '-1', 'low']) t.throws(() => load({ MAIL_RENDER_THREAD_NICE: v }), { message: /MAIL_RENDER_THREAD_NICE/ }, `MAIL_RENDER_THREAD_NICE=${v} refused`);
});

t.test('MAIL_TRUSTED_NETWORKS and MAIL_MX_GREET_PAUSE_MS', async (t) => {
  t.same(load().trustedNetworks, ['127.0.0.0/8', '::1/128'], 'loopback only by default');
  t.same(load({ MAIL_TRUSTED_NETWORKS: ' 10.0.0.0/8, 2001:db8::/32 ,192.0.2.7' }).trustedNetworks, ['10.0.0.0/8', '2001:db8::/32', '192.0.2.7'], 'a comma-separated list, a bare address allowed');
  t.same(load({ MAIL_TRUSTED_NETWORKS: '' }).trustedNetworks, [], 'empty: no client is trusted');
  for (const v of ['10.0.0.0/33', '::1/129', 'localhost', '10.0.0.0/8/1', '10.0.0.0/x', '127.0.0.1,300.1.1.1']) {
    t.throws(() => load({ MAIL_TRUSTED_NETWORKS: v }), { message: /MAIL_TRUSTED_NETWORKS must be comma-separated CIDR/ }, `MAIL_TRUSTED_NETWORKS=${v} refused`);
  }
  t.equal(load().mxGreetPauseMs, 100, 'smtp-server\'s own pause by default');
  t.equal(load({ MAIL_MX_GREET_PAUSE_MS: '0' }).mxGreetPauseMs, 0, '0: greet every client at once');
  t.equal(load({ MAIL_MX_GREET_PAUSE_MS: '6000' }).mxGreetPauseMs, 6000, "postscreen's greet wait");
  for (const v of ['-1', '30001', '1.5', 'soon', '']) t.throws(() => load({ MAIL_MX_GREET_PAUSE_MS: v }), { message: /MAIL_MX_GREET_PAUSE_MS must be 0\.\.30000/ }, `MAIL_MX_GREET_PAUSE_MS=${v} refused`);
});

t.test('MAIL_DNS_SERVERS parses a comma-separated host[:port] list', async (t) => {
  t.same(load({ MAIL_DNS_SERVERS: '127.0.0.1:5353, [::1]:53, 9.9.9.9' }).dnsServers, [
    { host: '127.0.0.1', port: 5353 },
    { host: '::1', port: 53 },
    { host: '9.9.9.9', port: 53 },
  ]);
  t.same(load({ MAIL_DNS_SERVERS: '' }).dnsServers, [], 'empty: the system resolvers');
  t.same(load({ MAIL_DNS_SERVERS: ' 1.1.1.1 ,, ' }).dnsServers, [{ host: '1.1.1.1', port: 53 }], 'blanks skipped');
});

t.test('parseDnsServer', async (t) => {
  const good: Array<[string, { host: string; port: number }]> = [
    ['9.9.9.9', { host: '9.9.9.9', port: 53 }],
    ['127.0.0.1:5353', { host: '127.0.0.1', port: 5353 }],
    [' 127.0.0.1:5353 ', { host: '127.0.0.1', port: 5353 }],
    ['[::1]:53', { host: '::1', port: 53 }],
    ['[::1]', { host: '::1', port: 53 }],
    ['[2001:db8::1]:5300', { host: '2001:db8::1', port: 5300 }],
    ['::1', { host: '::1', port: 53 }],
    ['2001:db8::53', { host: '2001:db8::53', port: 53 }],
    ['1.2.3.4:65535', { host: '1.2.3.4', port: 65535 }],
  ];
  for (const [spec, want] of good) t.same(parseDnsServer(spec), want, spec);
  for (const spec of ['dns.example', 'dns.example.com:53', 'localhost', '1.2.3:53', '1.2.3.4:x', '1.2.3.4:', ':53', '', '1.2.3.4:0', '1.2.3.4:65536', '1.2.3.4:-1', '[::1]:0', '[::1]:70000']) {
    t.throws(() => parseDnsServer(spec), `'${spec}' refused`);
    if (spec) t.throws(() => parseDnsServer(spec), { message: new RegExp(spec.replace(/[[\]]/g, '\\$&')) }, `'${spec}': the message quotes it`);
  }
});

t.test('bad values throw ConfigError naming the variable', async (t) => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ MAIL_API_PORT: 'abc' }, 'MAIL_API_PORT'],
    [{ MAIL_API_PORT: '70000' }, 'MAIL_API_PORT'],
    [{ MAIL_API_PORT: '65536' }, 'MAIL_API_PORT'],
    [{ MAIL_API_PORT: '-1' }, 'MAIL_API_PORT'],
    [{ MAIL_API_PORT: '80.5' }, 'MAIL_API_PORT'],
    [{ MAIL_MX_PORT: 'x' }, 'MAIL_MX_PORT'],
    [{ MAIL_SUBMISSION_PORT: '99999' }, 'MAIL_SUBMISSION_PORT'],
    [{ MAIL_SUBMISSIONS_PORT: 'smtp' }, 'MAIL_SUBMISSIONS_PORT'],
    [{ MAIL_IMAP_PORT: '-5' }, 'MAIL_IMAP_PORT'],
    [{ MAIL_IMAPS_PORT: '1.1' }, 'MAIL_IMAPS_PORT'],
    [{ MAIL_POP3_PORT: 'pop' }, 'MAIL_POP3_PORT'],
    [{ MAIL_POP3S_PORT: '100000' }, 'MAIL_POP3S_PORT'],
    [{ MAIL_OUTBOUND_PORT: '0' }, 'MAIL_OUTBOUND_PORT'],
    [{ MAIL_DEFAULT_PLAN: 'gold' }, 'MAIL_DEFAULT_PLAN'],
    [{ MAIL_DEFAULT_PLAN: 'Free' }, 'MAIL_DEFAULT_PLAN'],
    [{ MAIL_LOG_LEVEL: 'loud' }, 'MAIL_LOG_LEVEL'],
    [{ MAIL_DNS_SERVERS: '1.2.3.4:x' }, 'MAIL_DNS_SERVERS'],
    [{ MAIL_DNS_SERVERS: 'dns.example' }, 'MAIL_DNS_SERVERS'],
    [{ MAIL_DNS_SERVERS: '9.9.9.9, 1.2.3.4:99999' }, 'MAIL_DNS_SERVERS'],
    [{ MAIL_RELAY_URL: 'http://x' }, 'MAIL_RELAY_URL'],
    [{ MAIL_RELAY_URL: 'relay.example.com:25' }, 'MAIL_RELAY_URL'],
    [{ MAIL_BOOTSTRAP_API_KEY: 'nope' }, 'MAIL_BOOTSTRAP_API_KEY'],
    [{ MAIL_BOOTSTRAP_API_KEY: 'sk_live_short' }, 'MAIL_BOOTSTRAP_API_KEY'],
    [{ MAIL_BOOTSTRAP_API_KEY: 'pk_live_abcdefghijklmnopqrstuvwx' }, 'MAIL_BOOTSTRAP_API_KEY'],
    [{ MAIL_TLS_CERT: '/etc/tls/cert.pem' }, 'MAIL_TLS_CERT'],
    [{ MAIL_TLS_KEY: '/etc/tls/key.pem' }, 'MAIL_TLS_KEY'],
    [{ MAIL_DATA_DIR: '' }, 'MAIL_DATA_DIR'],
    [{ MAIL_BIND: '' }, 'MAIL_BIND'],
    [{ MAIL_HOSTNAME: 'not a hostname!' }, 'MAIL_HOSTNAME'],
    [{ MAIL_DNS_TIMEOUT_MS: '5' }, 'MAIL_DNS_TIMEOUT_MS'],
  ];
  for (const [env, variable] of cases) {
    const err = configError(t, env);
    if (err) t.match(err.message, variable, `${JSON.stringify(env)} names ${variable}`);
  }
  const apiPort = configError(t, { MAIL_API_PORT: 'abc' });
  t.match(apiPort?.message, /MAIL_API_PORT .*port number.*'abc'/, 'says what is wrong and shows the value');
});

t.test('every bad variable is named at once', async (t) => {
  const err = configError(t, { MAIL_API_PORT: 'abc', MAIL_DEFAULT_PLAN: 'gold', MAIL_LOG_LEVEL: 'loud' });
  t.match(err?.message, /MAIL_API_PORT/);
  t.match(err?.message, /MAIL_DEFAULT_PLAN/);
  t.match(err?.message, /MAIL_LOG_LEVEL/);
});

t.test('overrides (tests) win over the environment', async (t) => {
  const c = loadConfig({ MAIL_API_PORT: '1234', MAIL_DEFAULT_PLAN: 'free' }, { apiPort: 0, defaultPlan: 'pro' });
  t.equal(c.apiPort, 0);
  t.equal(c.defaultPlan, 'pro');
  t.throws(() => loadConfig({}, { apiPort: 70000 }), ConfigError, 'overrides are validated too');
});

t.test('an empty or non-decimal port is not silently accepted', async (t) => {
  for (const v of ['', ' ', '0x10', '1e3']) {
    t.throws(() => load({ MAIL_API_PORT: v }), ConfigError, `MAIL_API_PORT=${JSON.stringify(v)} refused`);
  }
});

t.test('a fully-qualified hostname with a trailing dot is accepted and normalised', async (t) => {
  let got: string | undefined;
  try {
    got = load({ MAIL_HOSTNAME: 'mx.example.com.' }).hostname;
  } catch {
    got = undefined;
  }
  t.equal(got, 'mx.example.com', 'trailing dot dropped');
});

t.test('a malformed bracketed DNS server is refused', async (t) => {
  t.throws(() => parseDnsServer('[::1]:x'), "'[::1]:x'");
  t.throws(() => parseDnsServer('[::1'), "'[::1'");
  t.throws(() => load({ MAIL_DNS_SERVERS: '[::1]:x' }), ConfigError, 'MAIL_DNS_SERVERS=[::1]:x');
});

t.test('MAIL_PUBLIC_URL: an http(s) base URL, its trailing slash dropped; null by default', async (t) => {
  t.equal(load().publicUrl, null, 'links then use https://<MAIL_HOSTNAME>');
  t.equal(load({ MAIL_PUBLIC_URL: 'https://mail.example.com/' }).publicUrl, 'https://mail.example.com');
  t.equal(load({ MAIL_PUBLIC_URL: 'https://example.com/mail//' }).publicUrl, 'https://example.com/mail');
  t.equal(load({ MAIL_PUBLIC_URL: 'http://127.0.0.1:8080' }).publicUrl, 'http://127.0.0.1:8080');
  t.equal(load({ MAIL_PUBLIC_URL: '' }).publicUrl, null);
  for (const bad of ['mail.example.com', 'ftp://mail.example.com', 'https://mail.example.com/?a=1', 'https://user@mail.example.com']) {
    t.throws(() => load({ MAIL_PUBLIC_URL: bad }), /MAIL_PUBLIC_URL must be an http\(s\) URL without query or fragment/, bad);
  }
});
