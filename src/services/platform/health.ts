import type { AppContext } from '../../context.js';

export interface Health {
  status: 'ok' | 'degraded';
  version: string;
  uptime_seconds: number;
  database: 'ok' | 'error';
}

export async function checkHealth(ctx: AppContext): Promise<Health> {
  let database: Health['database'] = 'ok';
  try {
    await ctx.db.raw('select 1');
  } catch (err) {
    ctx.log.error({ err }, 'health check: database unavailable');
    database = 'error';
  }
  return { status: database === 'ok' ? 'ok' : 'degraded', version: ctx.version, uptime_seconds: Math.round(process.uptime()), database };
}
