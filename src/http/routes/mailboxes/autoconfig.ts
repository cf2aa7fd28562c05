// Client autoconfiguration (no credential): Thunderbird's autoconfig document and Microsoft's Autodiscover
// POX answer, so that a mail client set up with only an address and a password finds IMAP, POP3 and SMTP
// submission. Both are XML; the documents are built by services/mailboxes/autoconfig.ts.
import type Koa from 'koa';
import { badRequest, payloadTooLarge } from '../../../core/errors.js';
import { defineRoute, type Route } from '../../route.js';
import { autodiscoverRequestAddress, autodiscoverResponse, clientAddress, thunderbirdConfig } from '../../../services/mailboxes/index.js';

/** An Autodiscover request is a few hundred bytes; anything past this is not one. */
export const AUTODISCOVER_MAX_BODY = 64 * 1024;

async function readSmallBody(koa: Koa.Context): Promise<string> {
  if (Number(koa.get('content-length') || 0) > AUTODISCOVER_MAX_BODY) throw payloadTooLarge('Autodiscover request body over 64 KB');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of koa.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > AUTODISCOVER_MAX_BODY) throw payloadTooLarge('Autodiscover request body over 64 KB');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const firstQuery = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

function thunderbird(path: string): Route {
  return defineRoute({
    method: 'GET',
    path,
    summary: 'Thunderbird autoconfig document (no credential; optional `emailaddress` query parameter)',
    tag: 'Client autoconfiguration',
    access: 'public',
    async handle({ app, rawQuery, koa }) {
      const given = firstQuery(rawQuery.emailaddress);
      const address = clientAddress(given);
      if (given !== undefined && given !== '' && !address) throw badRequest('emailaddress: must be a valid email address');
      koa.type = 'application/xml; charset=utf-8';
      koa.body = thunderbirdConfig(app.config, address);
      return undefined;
    },
  });
}

function autodiscover(method: 'GET' | 'POST', path: string): Route {
  return defineRoute({
    method,
    path,
    summary:
      method === 'POST'
        ? 'Microsoft Autodiscover (POX): the request XML names EMailAddress (no credential)'
        : 'Microsoft Autodiscover (POX) for the `email` (or `emailaddress`) query parameter (no credential)',
    tag: 'Client autoconfiguration',
    access: 'public',
    async handle({ app, rawQuery, koa }) {
      const given = method === 'POST' ? autodiscoverRequestAddress(await readSmallBody(koa)) : (firstQuery(rawQuery.email) ?? firstQuery(rawQuery.emailaddress));
      koa.type = 'text/xml; charset=utf-8';
      koa.body = autodiscoverResponse(app.config, clientAddress(given), app.clock.now());
      return undefined;
    },
  });
}

// Outlook spells the path with capitals; the router matches paths case-insensitively, so one declaration serves both.
export const autoconfigRoutes = [
  thunderbird('/.well-known/autoconfig/mail/config-v1.1.xml'),
  thunderbird('/mail/config-v1.1.xml'),
  autodiscover('POST', '/autodiscover/autodiscover.xml'),
  autodiscover('GET', '/autodiscover/autodiscover.xml'),
];
