// Sending domains: list, get, add, verify, and the DNS records to publish — the services behind /domains.
import { z } from 'zod';
import { CreateDomain } from '../../http/schemas/platform/domains.js';
import { createDomain, getDomain, listDomains, verifyDomain } from '../../services/platform/index.js';
import { defineTool, idArg } from '../tool.js';

const domainId = idArg('the domain id, as list_domains or create_domain gave it');

type DomainView = Awaited<ReturnType<typeof getDomain>>;

/** The records of a domain as a person publishes them: what to add (or remove), and where it stands. */
export function recordsToPublish(domain: DomainView) {
  return {
    domain: domain.name,
    status: domain.status,
    records: domain.dns_records.map((r) => ({
      record: r.record,
      type: r.type,
      name: r.name,
      value: r.value,
      ...(r.priority !== undefined ? { priority: r.priority } : {}),
      required: r.required,
      status: r.status,
      ...(r.reason ? { reason: r.reason } : {}),
      zone_file_line: r.zone_file_line,
    })),
  };
}

export const domainTools = [
  defineTool({
    name: 'list_domains',
    title: 'List sending domains',
    description: "The team's sending domains, newest first, each with its status (pending, verified, failed) and DNS records. Mail can be sent from an address of a verified domain only.",
    scope: 'mcp:read',
    input: z.object({}),
    async handler(ctx, principal) {
      return { domains: await listDomains(ctx, principal.teamId) };
    },
  }),
  defineTool({
    name: 'get_domain',
    title: 'Get a domain',
    description: 'One sending domain with its settings, its DNS records and the status of each (as last checked by verify_domain).',
    scope: 'mcp:read',
    input: z.object({ id: domainId }),
    async handler(ctx, principal, input) {
      return getDomain(ctx, principal.teamId, input.id);
    },
  }),
  defineTool({
    name: 'get_domain_dns_records',
    title: 'DNS records to publish',
    description:
      "The DNS records to publish at the domain's DNS host for it to verify (SPF, DKIM, DMARC, MX, SRV): type, name, value, whether it is required, its status, and the same record as one zone-file line. Show these to the person who manages the domain's DNS, then call verify_domain.",
    scope: 'mcp:read',
    input: z.object({ id: domainId }),
    async handler(ctx, principal, input) {
      return recordsToPublish(await getDomain(ctx, principal.teamId, input.id));
    },
  }),
  defineTool({
    name: 'create_domain',
    title: 'Add a sending domain',
    description:
      'Add a sending domain (`name`, e.g. example.com): the box makes its DKIM key and answers with the domain and the DNS records to publish. Options: `dkim_key_type` rsa (default) or ed25519, `tls_mode` opportunistic (default) or enforced, `open_tracking`, `click_tracking`. A domain already added gives a conflict error.',
    scope: 'mcp:admin',
    input: CreateDomain,
    async handler(ctx, principal, input) {
      return createDomain(ctx, principal.teamId, input);
    },
  }),
  defineTool({
    name: 'verify_domain',
    title: 'Verify a domain',
    description:
      "Look the domain's DNS records up now and update the status of each and of the domain; answers the domain. A record still `pending` or `failed` has a `reason` saying what DNS answered. DNS changes can take a while to be seen: call again later rather than in a loop.",
    scope: 'mcp:admin',
    input: z.object({ id: domainId }),
    async handler(ctx, principal, input) {
      return verifyDomain(ctx, principal.teamId, input.id);
    },
  }),
];
