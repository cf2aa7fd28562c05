// Resources: a domain's DNS setup — the records to publish at its DNS host, as a zone-file fragment with each
// record's status — at `mail://domains/{id}/dns`.
import type { AppContext } from '../context.js';
import { notFound } from '../core/errors.js';
import { getDomain, listDomains } from '../services/platform/index.js';

const PREFIX = 'mail://domains/';
const SUFFIX = '/dns';

export const DNS_RESOURCE_TEMPLATE = {
  uriTemplate: `${PREFIX}{id}${SUFFIX}`,
  name: 'domain-dns',
  title: "A domain's DNS setup",
  description: 'The DNS records to publish for a sending domain (SPF, DKIM, DMARC, MX, SRV) as zone-file lines, each with its status.',
  mimeType: 'text/plain',
};

const uriOf = (id: string) => `${PREFIX}${encodeURIComponent(id)}${SUFFIX}`;

type DomainView = Awaited<ReturnType<typeof getDomain>>;

/** The zone-file fragment of a domain: what to publish, and what each record's last check found. */
export function dnsSetupText(domain: DomainView): string {
  const lines = [`; DNS records for ${domain.name} (domain ${domain.status}); publish these at the domain's DNS host, then verify the domain.`];
  for (const r of domain.dns_records) {
    const note = [r.record, r.required ? 'required' : 'optional', r.status, r.reason].filter(Boolean).join(', ');
    lines.push(`; ${note}`, r.zone_file_line);
  }
  return `${lines.join('\n')}\n`;
}

export async function dnsResources(ctx: AppContext, teamId: string) {
  const domains = await listDomains(ctx, teamId);
  return domains.map((d) => ({ uri: uriOf(d.id), name: `${d.name} DNS`, title: `DNS setup of ${d.name}`, mimeType: 'text/plain' }));
}

export async function readDnsResource(ctx: AppContext, teamId: string, uri: string) {
  if (!uri.startsWith(PREFIX) || !uri.endsWith(SUFFIX)) throw notFound(`Resource not found: ${uri}`);
  let id = '';
  try {
    id = decodeURIComponent(uri.slice(PREFIX.length, -SUFFIX.length));
  } catch {
    // a malformed escape names no domain
  }
  if (id === '' || id.includes('/')) throw notFound(`Resource not found: ${uri}`);
  const domain = await getDomain(ctx, teamId, id);
  return { uri, mimeType: 'text/plain', text: dnsSetupText(domain) };
}
