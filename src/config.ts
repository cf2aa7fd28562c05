// Typed configuration: config/default.json, overridden by MAIL_* environment variables,
// validated once at start. A bad value stops start-up with a message naming the variable.
import { isIP } from 'node:net';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import cron from 'node-cron';
import { z } from 'zod';
import { API_KEY_PATTERN } from './core/ids.js';
import { LOG_LEVELS, type LogLevel } from './core/logger.js';
import { parseCidr } from './core/trusted-networks.js';

export const PLANS = ['free', 'starter', 'pro', 'scale', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

export { LOG_LEVELS, type LogLevel };

export interface DnsServer {
  host: string;
  port: number;
}

/** A delivery route: recipient domains (or MX hosts, `mx:` prefix) matched by glob go through `relay`, or directly when null. */
export interface RouteRule {
  name: string;
  /** e.g. `outlook.com`, `*.outlook.com`, `mx:*.protection.outlook.com`. */
  match: string[];
  relay: string | null;
}

export interface Config {
  dataDir: string;
  hostname: string;
  bind: string;
  apiPort: number;
  mxPort: number;
  submissionPort: number;
  submissionsPort: number;
  imapPort: number;
  imapsPort: number;
  pop3Port: number;
  pop3sPort: number;
  /** Empty: the system's resolvers. */
  dnsServers: DnsServer[];
  dnsTimeoutMs: number;
  outboundPort: number;
  relayUrl: string | null;
  /** Per-destination routes, tried in order before the global relay. */
  routes: RouteRule[];
  /** Deliveries (jobs) running at once. */
  deliveryConcurrency: number;
  /** SMTP connections kept per destination host (or relay). */
  connectionsPerHost: number;
  /** Worker threads that compose and DKIM-sign outgoing messages; 0 renders on the main thread. */
  renderThreads: number;
  /** A broadcast's fan-out: recipients handed to the send path per job (one write transaction). */
  broadcastPageSize: number;
  /** A broadcast's emails accepted but not yet taken by delivery, at most: the fan-out waits past it (transactional mail is not queued behind a campaign). */
  broadcastMaxInFlight: number;
  /**
   * The render threads' scheduling priority (Linux nice, 0..19): they are background work beside the main
   * thread, whose API and SMTP answers should not wait for a CPU behind message building. 0 leaves it as is.
   */
  renderThreadNice: number;
  /** Worker threads that run the MX's mailauth checks (SPF, DKIM, DMARC, ARC); 0 checks on the main thread. */
  inboundAuthThreads: number;
  /** Connect/greeting/command timeout for outbound SMTP (ms). */
  smtpTimeoutMs: number;
  tlsCert: string | null;
  tlsKey: string | null;
  bootstrapApiKey: string | null;
  defaultPlan: Plan;
  logLevel: LogLevel;
  /** Webhook URLs may point at loopback, private and link-local addresses (off: refused at creation and at delivery). */
  webhookAllowPrivate: boolean;
  /** Deadline of one webhook request (ms). */
  webhookTimeoutMs: number;
  /**
   * The box's own outbound addresses a domain may be given (`POST /domains/{id}/ip`), each with the HELO
   * name its connections greet with (its PTR record should name it). MAIL_OUTBOUND_IPS:
   * `203.0.113.5=mail5.example.net,203.0.113.6=mail6.example.net`.
   */
  outboundIps: Array<{ ip: string; helo: string }>;
  /** When the periodic DNS drift check runs (a cron expression, node-cron syntax, UTC), or `off`. */
  dnsCheckSchedule: string;
  /** A round's checks are spread over this many minutes (at most 80 % of the schedule's interval). */
  dnsCheckSpreadMinutes: number;
  /** Edge and per-credential request rate limits (MAIL_RATE_LIMITS=on|off); benchmarks turn them off. */
  rateLimits: boolean;
  /** A message failing DMARC whose domain publishes p=reject: refused at the MX (550 5.7.1), or kept and filed as junk. */
  inboundDmarcReject: 'refuse' | 'junk';
  /**
   * The base URL people reach this box's HTTP API at, for links in mail (unsubscribe, the preference page);
   * null: `https://<MAIL_HOSTNAME>` (a TLS proxy in front of the API port). No trailing slash.
   */
  publicUrl: string | null;
  /** The OAuth 2.0 authorization server (issue 33; dark-launched): off, every /oauth and OAuth discovery path is 404 and `pat_` tokens are unknown credentials. */
  oauthEnabled: boolean;
  /** Client networks the box trusts (CIDR blocks; loopback by default): the MX greets them without its pause. */
  trustedNetworks: string[];
  /**
   * How long the MX waits before it greets a client that is neither on the trusted networks nor passed the pause
   * recently; a client that talks meanwhile is refused (421). 0 greets every client at once. Never on submission.
   */
  mxGreetPauseMs: number;
  /**
   * Domains the operator declares theirs (Postfix's virtual domains): at start each is created trusted in the
   * first team (or an existing one marked trusted): usable for mailboxes and sending at once, shown verified by
   * the operator. Lowercase names; empty by default.
   */
  localDomains: string[];
  /** Bearer token of GET /metrics (Prometheus); null: the endpoint is off (404). */
  metricsToken: string | null;
  /** When scheduled backups run (a cron expression, node-cron syntax, UTC); empty: none (`admin backup` still works). */
  backupSchedule: string;
  /** Scheduled backups kept in `backupDir` (the newest); older ones are deleted after each good backup. */
  backupKeep: number;
  /** Where scheduled backups are written; null: `<dataDir>/backups` (better: a path on another disk). */
  backupDir: string | null;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** A decimal integer from the environment (no empty strings, hex or exponents), or a number from JSON. */
const decimal = (message: string) =>
  z.preprocess((v) => (typeof v === 'string' ? (/^\s*\d+\s*$/.test(v) ? Number(v) : NaN) : v), z.number({ error: message }).int(message));

const port = decimal('must be a port number (0..65535)')
  .pipe(z.number().min(0, 'must be a port number (0..65535)').max(65535, 'must be a port number (0..65535)'));

const hostnameRe = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;

/** `host:port`, bracketed for IPv6. */
export function formatDnsServer(s: DnsServer): string {
  return s.host.includes(':') ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`;
}

/** `host[:port]`, `[v6]:port` or a bare IPv6 address. */
export function parseDnsServer(spec: string): DnsServer {
  const s = spec.trim();
  let host = s;
  let portNum = 53;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(s);
  if (s.startsWith('[') && !bracketed) throw new Error(`'${spec}' is not [v6address]:port`);
  if (bracketed) {
    host = bracketed[1]!;
    if (bracketed[2]) portNum = Number(bracketed[2]);
  } else if ((s.match(/:/g) ?? []).length === 1) {
    const [h, p] = s.split(':');
    host = h!;
    if (!/^\d+$/.test(p ?? '')) throw new Error(`'${spec}' has a bad port`);
    portNum = Number(p);
  }
  if (!host || portNum < 1 || portNum > 65535) throw new Error(`'${spec}' is not address[:port]`);
  // The resolver (c-ares) takes addresses only: a name would stop the start-up later with a message naming no variable.
  if (isIP(host) === 0) throw new Error(`'${spec}': '${host}' is not an IP address`);
  return { host, port: portNum };
}

const relayUrl = z
  .string()
  .refine((v) => {
    try {
      const u = new URL(v);
      return (u.protocol === 'smtp:' || u.protocol === 'smtps:') && u.hostname.length > 0;
    } catch {
      return false;
    }
  }, 'must be smtp://[user:pass@]host[:port] or smtps://…');

const routeRule = z.object({
  name: z.string().min(1),
  match: z.array(z.string().min(1)).min(1),
  relay: relayUrl.nullable(),
});

const routes = z.preprocess((v) => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
}, z.array(routeRule, { error: 'must be a JSON array of {"name","match":[…],"relay":"smtp://…"|null}' })) as z.ZodType<RouteRule[]>;

const bootstrapKey = z
  .string()
    .regex(API_KEY_PATTERN, 'must look like sk_live_<16+ characters> or sk_test_<16+ characters>');

interface Field<K extends keyof Config> {
  key: K;
  env: string;
  schema: z.ZodType<Config[K]>;
}

function field<K extends keyof Config>(key: K, env: string, schema: z.ZodType<Config[K]>): Field<K> {
  return { key, env, schema };
}

const nullable = (s: z.ZodType<string>) =>
  z.preprocess((v) => (v === '' ? null : v), s.nullable()) as z.ZodType<string | null>;

/** An http(s) origin, optionally with a path prefix; kept without its trailing slash. */
const publicUrl = z
  .string()
  .refine((v) => {
    try {
      const u = new URL(v);
      return (u.protocol === 'https:' || u.protocol === 'http:') && u.search === '' && u.hash === '' && u.username === '';
    } catch {
      return false;
    }
  }, 'must be an http(s) URL without query or fragment, e.g. https://mail.example.com')
  .transform((v) => v.replace(/\/+$/, ''));

/** Every setting, its environment variable and its rule, in one table. */
const FIELDS = [
  field('dataDir', 'MAIL_DATA_DIR', z.string().min(1, 'must not be empty')),
  field('hostname', 'MAIL_HOSTNAME', z.string().regex(hostnameRe, 'must be a DNS host name')),
  field('bind', 'MAIL_BIND', z.string().min(1, 'must be an address to bind')),
  field('apiPort', 'MAIL_API_PORT', port),
  field('mxPort', 'MAIL_MX_PORT', port),
  field('submissionPort', 'MAIL_SUBMISSION_PORT', port),
  field('submissionsPort', 'MAIL_SUBMISSIONS_PORT', port),
  field('imapPort', 'MAIL_IMAP_PORT', port),
  field('imapsPort', 'MAIL_IMAPS_PORT', port),
  field('pop3Port', 'MAIL_POP3_PORT', port),
  field('pop3sPort', 'MAIL_POP3S_PORT', port),
  field(
    'dnsServers',
    'MAIL_DNS_SERVERS',
    z.preprocess(
      (v) =>
        typeof v === 'string'
          ? v.split(',').map((s) => s.trim()).filter(Boolean)
          : Array.isArray(v)
            ? v.map((s: unknown) => (s && typeof s === 'object' ? formatDnsServer(s as DnsServer) : s))
            : v,
      z.array(z.string()).transform((list, zctx) => {
        const out: DnsServer[] = [];
        for (const item of list) {
          try {
            out.push(parseDnsServer(item));
          } catch (err) {
            zctx.addIssue({ code: 'custom', message: `must be comma-separated address[:port]: ${(err as Error).message}` });
            return z.NEVER;
          }
        }
        return out;
      }),
    ) as z.ZodType<DnsServer[]>,
  ),
  field('dnsTimeoutMs', 'MAIL_DNS_TIMEOUT_MS', decimal('must be an integer').pipe(z.number().min(100, 'must be at least 100').max(60000, 'must be at most 60000'))),
  field('outboundPort', 'MAIL_OUTBOUND_PORT', port.refine((p) => p > 0, 'must be a port number (1..65535)')),
  field('relayUrl', 'MAIL_RELAY_URL', nullable(relayUrl)),
  field('routes', 'MAIL_ROUTES', routes),
  field('deliveryConcurrency', 'MAIL_DELIVERY_CONCURRENCY', decimal('must be 1..1000').pipe(z.number().min(1, 'must be 1..1000').max(1000, 'must be 1..1000'))),
  field('connectionsPerHost', 'MAIL_CONNECTIONS_PER_HOST', decimal('must be 1..100').pipe(z.number().min(1, 'must be 1..100').max(100, 'must be 1..100'))),
  field('broadcastPageSize', 'MAIL_BROADCAST_PAGE_SIZE', decimal('must be 1..5000').pipe(z.number().min(1, 'must be 1..5000').max(5000, 'must be 1..5000'))),
  field('broadcastMaxInFlight', 'MAIL_BROADCAST_MAX_IN_FLIGHT', decimal('must be 1..1000000').pipe(z.number().min(1, 'must be 1..1000000').max(1000000, 'must be 1..1000000'))),
  field('renderThreads', 'MAIL_RENDER_THREADS', decimal('must be 0..16').pipe(z.number().min(0, 'must be 0..16').max(16, 'must be 0..16'))),
  field('renderThreadNice', 'MAIL_RENDER_THREAD_NICE', decimal('must be 0..19').pipe(z.number().min(0, 'must be 0..19').max(19, 'must be 0..19'))),
  field('inboundAuthThreads', 'MAIL_INBOUND_AUTH_THREADS', decimal('must be 0..16').pipe(z.number().min(0, 'must be 0..16').max(16, 'must be 0..16'))),
  field('smtpTimeoutMs', 'MAIL_SMTP_TIMEOUT_MS', decimal('must be an integer').pipe(z.number().min(1000, 'must be at least 1000').max(600000, 'must be at most 600000'))),
  field('tlsCert', 'MAIL_TLS_CERT', nullable(z.string())),
  field('tlsKey', 'MAIL_TLS_KEY', nullable(z.string())),
  field('bootstrapApiKey', 'MAIL_BOOTSTRAP_API_KEY', nullable(bootstrapKey)),
  field('defaultPlan', 'MAIL_DEFAULT_PLAN', z.enum(PLANS, { error: `must be one of ${PLANS.join(', ')}` })),
  field('logLevel', 'MAIL_LOG_LEVEL', z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` })),
  field(
    'webhookAllowPrivate',
    'MAIL_WEBHOOK_ALLOW_PRIVATE',
    z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean({ error: 'must be true or false' })),
  ),
  field('webhookTimeoutMs', 'MAIL_WEBHOOK_TIMEOUT_MS', decimal('must be an integer').pipe(z.number().min(100, 'must be at least 100').max(60000, 'must be at most 60000'))),
  field(
    'outboundIps',
    'MAIL_OUTBOUND_IPS',
    z.preprocess(
      (v) =>
        typeof v === 'string'
          ? v.split(',').map((s) => s.trim()).filter(Boolean).map((item) => {
              const eq = item.indexOf('=');
              return eq > 0 ? { ip: item.slice(0, eq).trim(), helo: item.slice(eq + 1).trim() } : { ip: item, helo: '' };
            })
          : v,
      z
        .array(z.object({ ip: z.string(), helo: z.string() }), { error: 'must be comma-separated address=helo-name pairs' })
        .superRefine((list, zctx) => {
          const seen = new Set<string>();
          for (const { ip, helo } of list) {
            if (!isIP(ip)) zctx.addIssue({ code: 'custom', message: `must be comma-separated address=helo-name pairs: ${ip} is not an IP address` });
            else if (!hostnameRe.test(helo)) zctx.addIssue({ code: 'custom', message: `must be comma-separated address=helo-name pairs: ${ip} needs a HELO host name (${ip}=mail.example.net)` });
            else if (seen.has(ip)) zctx.addIssue({ code: 'custom', message: `must be comma-separated address=helo-name pairs: ${ip} is listed twice` });
            seen.add(ip);
          }
        }),
    ) as z.ZodType<Array<{ ip: string; helo: string }>>,
  ),
  field('dnsCheckSchedule', 'MAIL_DNS_CHECK_SCHEDULE', z.string().trim().refine((v) => v === 'off' || cron.validate(v), 'must be a cron expression (e.g. "0 3 * * *") or off')),
  field('dnsCheckSpreadMinutes', 'MAIL_DNS_CHECK_SPREAD_MINUTES', decimal('must be 0..1440').pipe(z.number().min(0, 'must be 0..1440').max(1440, 'must be 0..1440'))),
  field(
    'rateLimits',
    'MAIL_RATE_LIMITS',
    z.preprocess((v) => (v === 'on' || v === 'true' ? true : v === 'off' || v === 'false' ? false : v), z.boolean({ error: 'must be on or off' })),
  ),
  field('inboundDmarcReject', 'MAIL_INBOUND_DMARC_REJECT', z.enum(['refuse', 'junk'], { error: 'must be refuse or junk' })),
  field('publicUrl', 'MAIL_PUBLIC_URL', nullable(publicUrl)),
  field('metricsToken', 'MAIL_METRICS_TOKEN', nullable(z.string().min(16, 'must be at least 16 characters'))),
  field('backupSchedule', 'MAIL_BACKUP_SCHEDULE', z.string().trim().refine((v) => v === '' || cron.validate(v), 'must be a cron expression (e.g. "30 2 * * *") or empty (off)')),
  field('backupKeep', 'MAIL_BACKUP_KEEP', decimal('must be 1..1000').pipe(z.number().min(1, 'must be 1..1000').max(1000, 'must be 1..1000'))),
  field('backupDir', 'MAIL_BACKUP_DIR', nullable(z.string().trim().min(1, 'must be a directory path'))),
  field(
    'localDomains',
    'MAIL_LOCAL_DOMAINS',
    z.preprocess(
      (v) => (typeof v === 'string' ? v.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean) : v),
      z.array(z.string().regex(/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/, 'must be comma-separated domain names'), { error: 'must be comma-separated domain names' }),
    ),
  ),
  field(
    'oauthEnabled',
    'MAIL_OAUTH_ENABLED',
    z.preprocess((v) => (v === 'on' || v === 'true' ? true : v === 'off' || v === 'false' ? false : v), z.boolean({ error: 'must be true or false' })),
  ),
  field(
    'trustedNetworks',
    'MAIL_TRUSTED_NETWORKS',
    z.preprocess(
      (v) => (typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter(Boolean) : v),
      z.array(z.string(), { error: 'must be comma-separated CIDR blocks (address/prefix)' }).superRefine((list, zctx) => {
        for (const item of list) {
          try {
            parseCidr(item);
          } catch (err) {
            zctx.addIssue({ code: 'custom', message: `must be comma-separated CIDR blocks (address/prefix): ${(err as Error).message}` });
            return;
          }
        }
      }),
    ) as z.ZodType<string[]>,
  ),
  field('mxGreetPauseMs', 'MAIL_MX_GREET_PAUSE_MS', decimal('must be 0..30000').pipe(z.number().min(0, 'must be 0..30000').max(30000, 'must be 0..30000'))),
] as const;

/** The environment variable of each setting, for messages and documentation. */
export const CONFIG_ENV: Record<keyof Config, string> = Object.fromEntries(FIELDS.map((f) => [f.key, f.env])) as Record<
  keyof Config,
  string
>;

function readDefaults(): Record<string, unknown> {
  const file = new URL('../config/default.json', import.meta.url);
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** Every listener on a port the system picks (tests and benchmarks that run beside other appliances). */
export const ANY_FREE_PORTS = {
  apiPort: 0,
  mxPort: 0,
  submissionPort: 0,
  submissionsPort: 0,
  imapPort: 0,
  imapsPort: 0,
  pop3Port: 0,
  pop3sPort: 0,
} as const satisfies Partial<Config>;

/**
 * Builds the configuration from the defaults file, then `env`, then `overrides` (tests).
 * Throws ConfigError naming every bad variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const defaults = readDefaults();
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const f of FIELDS) {
    const fromEnv = env[f.env];
    let raw: unknown = fromEnv !== undefined ? fromEnv : defaults[f.key];
    if (f.key in overrides) raw = overrides[f.key];
    if (f.key === 'hostname') {
      if (raw === null || raw === undefined || raw === '') raw = os.hostname().toLowerCase();
      if (typeof raw === 'string') raw = raw.toLowerCase().replace(/\.$/, '');
    }
    const parsed = f.schema.safeParse(raw);
    if (parsed.success) {
      out[f.key] = parsed.data;
    } else {
      const shown = typeof raw === 'string' ? `'${raw}'` : JSON.stringify(raw);
      problems.push(`${f.env} ${parsed.error.issues[0]?.message ?? 'is invalid'} (got ${shown})`);
    }
  }
  if (problems.length > 0) throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  const config = out as unknown as Config;
  if ((config.tlsCert === null) !== (config.tlsKey === null)) {
    throw new ConfigError('Invalid configuration: MAIL_TLS_CERT and MAIL_TLS_KEY must be set together');
  }
  config.dataDir = path.resolve(config.dataDir);
  return config;
}
