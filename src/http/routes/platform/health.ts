import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { checkHealth } from '../../../services/platform/index.js';

export const healthRoutes = [
  defineRoute({
    method: 'GET',
    path: '/health',
    summary: 'Liveness and database check (no credential)',
    tag: 'System',
    access: 'public',
    response: z.object({ status: z.enum(['ok', 'degraded']), version: z.string(), uptime_seconds: z.number(), database: z.enum(['ok', 'error']) }),
    async handle({ app, koa }) {
      const health = await checkHealth(app);
      if (health.status !== 'ok') koa.status = 503;
      koa.body = health;
      return undefined;
    },
  }),
];
