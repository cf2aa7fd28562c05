// The public URLs of open and click tracking (no credential: the signed token in the path is the only key).
// Both answer at once whatever the token: a pixel is always a 1×1 GIF that no cache keeps; a click with a good
// token is a 302 to the link the stored email has at the token's index, anything else a small 404 page and
// never a redirect (no open redirect). HEAD answers the same and records nothing (link scanners ask HEAD).
// The client address is the socket's (the box does not trust X-Forwarded-For): loopback has no country.
import type Koa from 'koa';
import { defineRoute, type Route } from '../../route.js';
import { recordClick, recordOpen, TRACK_CLICK_PATH, TRACK_OPEN_PATH, type HitRequest } from '../../../services/sending/index.js';

const tag = 'Tracking (public)';

/** The smallest transparent GIF: 1×1, 43 bytes. */
export const PIXEL_GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

export const BAD_LINK_HTML =
  '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>Link not found</title></head>' +
  '<body style="font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222">' +
  '<h1 style="font-size:1.4rem">This link does not work</h1><p>It may have been altered or copied incompletely, or the email it came from is no longer kept.</p></body></html>\n';

function noStore(koa: Koa.Context): void {
  koa.set('Cache-Control', 'no-store, no-cache, must-revalidate, max-age=0');
  koa.set('Pragma', 'no-cache');
  koa.set('Expires', '0');
  koa.set('Referrer-Policy', 'no-referrer');
  koa.set('X-Robots-Tag', 'noindex, nofollow');
}

const hitOf = (koa: Koa.Context): HitRequest => ({ ip: koa.ip ?? '', userAgent: koa.get('user-agent') ?? '' });

export const trackingRoutes: Route[] = [
  defineRoute({
    method: 'GET',
    path: `${TRACK_OPEN_PATH}/{token}`,
    summary: 'The open-tracking pixel of an email (no credential): a 1×1 transparent GIF, always, not cached; a good token records `opened` and email.opened',
    tag,
    access: 'public',
    async handle({ app, params, koa }) {
      if (koa.method === 'GET') {
        try {
          await recordOpen(app, params.token!, hitOf(koa));
        } catch (err) {
          app.log.error({ err }, 'tracking: open pixel failed');
        }
      }
      noStore(koa);
      koa.status = 200;
      koa.type = 'image/gif';
      koa.body = PIXEL_GIF;
      return undefined;
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${TRACK_CLICK_PATH}/{token}`,
    summary: 'A tracked link of an email (no credential): 302 to the link the email was sent with, recording `clicked` and email.clicked; a bad token answers a 404 page, never a redirect',
    tag,
    access: 'public',
    async handle({ app, params, koa }) {
      let url: string | null = null;
      try {
        // HEAD: where the link goes, without counting a click (the same checks; nothing written).
        url = await recordClick(app, params.token!, hitOf(koa), koa.method === 'GET');
      } catch (err) {
        app.log.error({ err }, 'tracking: click failed');
      }
      noStore(koa);
      if (url === null) {
        koa.status = 404;
        koa.type = 'text/html; charset=utf-8';
        koa.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
        koa.body = BAD_LINK_HTML;
        return undefined;
      }
      koa.status = 302;
      // As stored; a URL with characters a header cannot carry goes in its encoded form (same target).
      koa.set('Location', /^[\x21-\x7e]*$/.test(url) ? url : new URL(url).href);
      koa.type = 'text/plain; charset=utf-8';
      koa.body = `Found: ${url}\n`;
      return undefined;
    },
  }),
];
