// GET /metrics: Prometheus text format (issue 37 §2). Off (404) unless MAIL_METRICS_TOKEN is set; then the scraper
// sends it as a bearer token (Prometheus: `authorization: { credentials: … }`). An API key is not accepted: the
// metrics are the whole box's, not a team's. The token is compared in constant time.
import { timingSafeEqual, createHash } from 'node:crypto';
import { defineRoute } from '../../route.js';
import { notFound, unauthorized } from '../../../core/errors.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

export const metricsRoutes = [
  defineRoute({
    method: 'GET',
    path: '/metrics',
    summary: 'Prometheus metrics (MAIL_METRICS_TOKEN as bearer; 404 when unset)',
    tag: 'System',
    access: 'public',
    async handle({ app, koa }) {
      const token = app.config.metricsToken;
      if (!token) throw notFound('Not found');
      const given = /^Bearer (.+)$/i.exec(koa.get('authorization'))?.[1] ?? '';
      if (!timingSafeEqual(digest(given), digest(token))) throw unauthorized('Invalid metrics token');
      const { contentType, body } = await app.metrics.scrape();
      koa.type = contentType;
      koa.body = body;
      return undefined;
    },
  }),
];
