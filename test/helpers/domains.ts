// Adds a sending domain the way a customer would: create it, publish its records on the loopback DNS
// server, and verify it through the API.
import type { TestApp } from './app.js';
import { TEST_HOSTNAME } from './app.js';
import type { TestDns } from './dns-server.js';

interface DnsRecordView {
  record: string;
  type: 'TXT' | 'MX' | 'SRV' | 'CNAME';
  name: string;
  value: string;
  priority?: number;
}

export interface DomainView {
  id: string;
  name: string;
  status: string;
  dns_records: DnsRecordView[];
}

/** An SRV record of `dns_records` (`value` is `<weight> <port> <target>`) as the DNS server serves it. */
export function srvValue(r: Pick<DnsRecordView, 'value' | 'priority'>): { priority: number; weight: number; port: number; target: string } {
  const [weight, port, target] = r.value.split(' ');
  return { priority: r.priority ?? 0, weight: Number(weight), port: Number(port), target: target! };
}

/** Publishes every record the domain asks for (and an A record for the box's own name). */
export function publishRecords(dns: TestDns, domain: DomainView): void {
  dns.set('A', TEST_HOSTNAME, ['127.0.0.1']);
  for (const r of domain.dns_records) {
    if (r.type === 'MX') dns.set('MX', r.name, [{ exchange: r.value, priority: r.priority ?? 10 }]);
    else if (r.type === 'SRV') dns.set('SRV', r.name, [srvValue(r)]);
    else if (r.type === 'CNAME') dns.set('CNAME', r.name, [r.value]);
    else dns.set('TXT', r.name, [r.value]);
  }
}

export async function addVerifiedDomain(app: TestApp, dns: TestDns, name: string, key?: string): Promise<DomainView> {
  const created = await app.request<DomainView>('POST', '/domains', { body: { name }, ...(key ? { key } : {}) });
  if (created.status !== 201) throw new Error(`POST /domains ${name}: ${created.status} ${created.text}`);
  publishRecords(dns, created.body);
  const verified = await app.request<DomainView>('POST', `/domains/${created.body.id}/verify`, key ? { key } : {});
  if (verified.body.status !== 'verified') throw new Error(`${name} did not verify: ${verified.text}`);
  return verified.body;
}
