// Operator CLI: `npm run -s admin -- <resource> <verb> [--flag value …]` (entry point: admin.ts).
// Prints exactly one JSON value on stdout; errors go to stderr with a non-zero exit.
// It opens the same SQLite file as the running appliance (WAL lets both work at once).
import { ConfigError, loadConfig, PLANS, type Plan } from '../config.js';
import { createContext, type AppContext } from '../context.js';
import { createLogger } from '../core/logger.js';
import { AppError } from '../core/errors.js';
import { acknowledgeAlert, listAllAlerts, startDnsCheckRound, createApiKey, listApiKeys, KEY_MODES, PERMISSIONS, type KeyMode, type Permission, createTeamWithKey, createDomain, getTeam, listTeams, REGIONS, setTeamPlan, trustDomain, type Team } from '../services/platform/index.js';
import {
  createOAuthUser, deleteClient, deleteOAuthUser, listClients, listOAuthUsers, OAuthError, registerClient, resetOAuthUserPassword
} from '../services/platform/index.js';
import { backupTo, operatorStatus, restoreFrom } from '../services/housekeeping/index.js';
import { getHold, getUsage, releaseHold, setNewSenderPause } from '../services/sending/index.js';

export const USAGE = `usage: npm run -s admin -- <command>
  teams create --name NAME --plan ${PLANS.join('|')} --owner EMAIL
  teams list
  teams set-plan --team TEAM_ID --plan ${PLANS.join('|')}
  teams usage --team TEAM_ID [--month YYYY-MM]
  teams hold --team TEAM_ID
  teams release-hold --team TEAM_ID
  platform pause-new-senders on|off
  keys create --team TEAM_ID --name NAME --permission ${PERMISSIONS.join('|')} [--mode ${KEY_MODES.join('|')}]
  keys list --team TEAM_ID
  domains check-dns [--spread-minutes N]   (queue a DNS drift check of every verified domain now, spread over N minutes, default 60)
  alerts list [--team TEAM_ID] [--state open|all] [--limit N]   (newest first; open: not acknowledged; N 1..1000, default 50)
  alerts ack --team TEAM_ID --id ALERT_ID
  oauth clients create --name NAME --redirect-uri URI[,URI…] [--scope "SCOPE …"] [--confidential yes]
  oauth clients list
  oauth clients delete --client CLIENT_ID
  oauth logins create --team TEAM_ID --email EMAIL
  oauth logins list --team TEAM_ID
  oauth logins reset-password --email EMAIL
  oauth logins delete --email EMAIL
  domains add NAME [--trusted] [--team TEAM_ID]   (--trusted: verified by the operator, usable at once;
                                                   --team defaults to the box's first team)
  status                                          listeners, queue, disk, certificate, last DNS check
  backup --to FILE                                online copy of the database and the master key (one .tar.gz)
  restore --from FILE [--data-dir DIR]            into an empty data directory (MAIL_DATA_DIR by default)`;

class UsageError extends Error {}

/** A team as every command shows it: the id is `team_id`, as in `--team TEAM_ID` and the usage and hold answers. */
function teamView(team: Team): { team_id: string; name: string; plan: Plan; owner_email: string; created_at: string } {
  return { team_id: team.id, name: team.name, plan: team.plan, owner_email: team.owner_email, created_at: team.created_at };
}

type Flags = Record<string, string>;

/** Flags that take no value. */
const SWITCHES = new Set(['--trusted']);

function parseArgs(argv: string[]): { words: string[]; flags: Flags } {
  const words: string[] = [];
  const flags: Flags = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      if (eq > 0) {
        flags[arg.slice(2, eq)] = arg.slice(eq + 1);
      } else {
        if (SWITCHES.has(arg)) {
          flags[arg.slice(2)] = 'true';
          continue;
        }
        const value = argv[i + 1];
        if (value === undefined || value.startsWith('--')) throw new UsageError(`${arg} needs a value`);
        flags[arg.slice(2)] = value;
        i++;
      }
    } else {
      words.push(arg);
    }
  }
  return { words, flags };
}

function required(flags: Flags, name: string): string {
  const v = flags[name]?.trim();
  if (!v) throw new UsageError(`--${name} is required`);
  return v;
}

function oneOf<T extends string>(value: string, allowed: readonly T[], name: string): T {
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`--${name} must be one of ${allowed.join(', ')}`);
  return value as T;
}

/** The box's first team (the bootstrap's on a box set up by `npm start`). */
async function firstTeam(ctx: AppContext): Promise<Team> {
  const teams = await listTeams(ctx);
  const first = [...teams].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))[0];
  if (!first) throw new UsageError('the box has no team yet: start it once (npm start) or pass --team');
  return first;
}

async function run(ctx: AppContext, words: string[], flags: Flags): Promise<unknown> {
  const command = words.join(' ');
  switch (command) {
    case 'teams create': {
      const owner = required(flags, 'owner');
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(owner)) throw new UsageError('--owner must be an email address');
      const { team, issued } = await createTeamWithKey(ctx, {
        name: required(flags, 'name'),
        plan: oneOf<Plan>(required(flags, 'plan'), PLANS, 'plan'),
        ownerEmail: owner,
      });
      return { ...teamView(team), key_id: issued.key.id, api_key: issued.token };
    }
    case 'teams list':
      return (await listTeams(ctx)).map(teamView);
    case 'teams set-plan': {
      const team = await setTeamPlan(ctx, required(flags, 'team'), oneOf<Plan>(required(flags, 'plan'), PLANS, 'plan'));
      return teamView(team);
    }
    case 'teams usage': {
      const month = flags.month;
      if (month !== undefined && !/^\d{4}-(0[1-9]|1[0-2])$/.test(month)) throw new UsageError('--month must be YYYY-MM');
      return getUsage(ctx, (await getTeam(ctx, required(flags, 'team'))).id, month);
    }
    case 'teams hold':
      return getHold(ctx, (await getTeam(ctx, required(flags, 'team'))).id);
    case 'teams release-hold':
      return releaseHold(ctx, (await getTeam(ctx, required(flags, 'team'))).id);
    case 'platform pause-new-senders on':
    case 'platform pause-new-senders off':
      return setNewSenderPause(ctx, command.endsWith(' on'));
    case 'keys create': {
      const team = await getTeam(ctx, required(flags, 'team'));
      const { key, token } = await createApiKey(ctx, team.id, {
        name: required(flags, 'name'),
        permission: oneOf<Permission>(required(flags, 'permission'), PERMISSIONS, 'permission'),
        mode: oneOf<KeyMode>(flags.mode ?? 'live', KEY_MODES, 'mode'),
      });
      return { team_id: team.id, ...key, api_key: token };
    }
    case 'keys list': {
      const team = await getTeam(ctx, required(flags, 'team'));
      return listApiKeys(ctx, team.id);
    }
    case 'domains check-dns': {
      const minutes = flags['spread-minutes'] === undefined ? 60 : Number(flags['spread-minutes']);
      if (!Number.isInteger(minutes) || minutes < 0 || minutes > 1440) throw new UsageError('--spread-minutes must be an integer between 0 and 1440');
      return { queued: await startDnsCheckRound(ctx, minutes * 60_000), spread_minutes: minutes };
    }
    case 'alerts list': {
      const limit = flags.limit === undefined ? 50 : Number(flags.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be an integer between 1 and 1000');
      const teamId = flags.team === undefined ? undefined : (await getTeam(ctx, required(flags, 'team'))).id;
      return (await listAllAlerts(ctx, { limit, open: oneOf(flags.state ?? 'all', ['open', 'all'] as const, 'state') === 'open', teamId })).map(({ teamId: team_id, ...a }) => ({ team_id, ...a }));
    }
    case 'alerts ack': {
      const team = await getTeam(ctx, required(flags, 'team'));
      return acknowledgeAlert(ctx, team.id, required(flags, 'id'));
    }
    case 'oauth clients create': {
      const confidential = flags.confidential === undefined ? false : oneOf(flags.confidential, ['yes', 'no'] as const, 'confidential') === 'yes';
      const redirectUris = required(flags, 'redirect-uri').split(',').map((u) => u.trim()).filter(Boolean);
      const { client, clientSecret } = await registerClient(ctx, { name: required(flags, 'name'), redirectUris, scope: flags.scope, confidential, registeredBy: 'operator' });
      return clientSecret ? { ...client, client_secret: clientSecret } : client;
    }
    case 'oauth clients list':
      return listClients(ctx);
    case 'oauth clients delete':
      await deleteClient(ctx, required(flags, 'client'));
      return { deleted: true };
    case 'oauth logins create': {
      const team = await getTeam(ctx, required(flags, 'team'));
      const email = required(flags, 'email');
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw new UsageError('--email must be an email address');
      const { user, password } = await createOAuthUser(ctx, team.id, email);
      return { ...user, password };
    }
    case 'oauth logins list':
      return listOAuthUsers(ctx, (await getTeam(ctx, required(flags, 'team'))).id);
    case 'oauth logins reset-password': {
      const { user, password } = await resetOAuthUserPassword(ctx, required(flags, 'email'));
      return { ...user, password };
    }
    case 'oauth logins delete':
      await deleteOAuthUser(ctx, required(flags, 'email'));
      return { deleted: true };
    case 'status':
      return operatorStatus(ctx);
    case 'backup':
      return backupTo(ctx, required(flags, 'to'));
    default:
      if (words[0] === 'domains' && words[1] === 'add') {
        const name = words[2];
        if (!name || words.length > 3) throw new UsageError('domains add needs one domain name');
        const team = flags.team ? await getTeam(ctx, flags.team) : await firstTeam(ctx);
        if (flags.trusted === 'true') {
          const { domain, created } = await trustDomain(ctx, team.id, name);
          return { team_id: team.id, created, ...domain };
        }
        const domain = await createDomain(ctx, team.id, { name, region: REGIONS[0], open_tracking: false, click_tracking: false, tls_mode: 'opportunistic' });
        return { team_id: team.id, created: true, ...domain };
      }
      throw new UsageError(command ? `unknown command: ${command}` : 'no command given');
  }
}

/** Where a run of the CLI reads its settings and writes its answer (the process's own, or a test's). */
export interface AdminIo {
  env: NodeJS.ProcessEnv;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/** One run of the CLI on `argv` (the words after `admin`): its exit code. */
export async function main(argv: string[], io: AdminIo = { env: process.env, stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  let ctx: AppContext | undefined;
  try {
    // --help and -h are switches, not flags taking a value: answered before the arguments are parsed.
    if (argv.includes('--help') || argv.includes('-h')) {
      io.stderr.write(`${USAGE}\n`);
      return 0;
    }
    const { words, flags } = parseArgs(argv);
    if (words[0] === 'help') {
      io.stderr.write(`${USAGE}\n`);
      return 0;
    }
    const config = loadConfig(io.env);
    // Restore writes into an empty data directory: no context (which would create the database there) is opened.
    if (words.join(' ') === 'restore') {
      const result = await restoreFrom(required(flags, 'from'), flags['data-dir'] ?? config.dataDir);
      io.stdout.write(`${JSON.stringify(result)}\n`);
      return 0;
    }
    // Logs go to stderr: stdout carries only the JSON answer.
    ctx = await createContext(config, { logger: createLogger('warn', 2).child({ cli: 'admin' }) });
    const result = await run(ctx, words, flags);
    io.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) io.stderr.write(`error: ${err.message}\n${USAGE}\n`);
    else if (err instanceof AppError || err instanceof ConfigError || err instanceof OAuthError) io.stderr.write(`error: ${err.message}\n`);
    else io.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return err instanceof UsageError ? 2 : 1;
  } finally {
    await ctx?.db.destroy();
  }
}

