// A real DNS server on loopback (dns2, UDP and TCP on the same port), serving a zone the test controls.
// Stands in for the internet's DNS: the appliance resolves through it via MAIL_DNS_SERVERS.
import dns2 from 'dns2';
import type { DnsServer } from '../../src/config.js';

const { Packet } = dns2;

export type RecordType = 'A' | 'AAAA' | 'TXT' | 'MX' | 'CNAME' | 'SRV' | 'PTR';
export interface MxValue {
  exchange: string;
  priority: number;
}
export interface SrvValue {
  priority: number;
  weight: number;
  port: number;
  target: string;
}
/** A TXT record is a string (split in 255-byte strings when longer) or its character-strings as given. */
type Value = string | string[] | MxValue | SrvValue;

export interface TestDns {
  server: DnsServer;
  /** Replaces the records of one type at a name. TXT values longer than 255 bytes are split into strings; an array is one record's strings. */
  set(type: RecordType, name: string, values: Value[]): void;
  /** Removes the records of one type at a name (or all types). */
  remove(name: string, type?: RecordType): void;
  /** Answers SERVFAIL for this name from now on. */
  fail(name: string): void;
  /** Never answers questions about this name from now on (the client times out). */
  drop(name: string): void;
  /** The questions asked so far, as `TYPE name`. */
  queries: string[];
  stop(): Promise<void>;
}

const norm = (name: string) => name.toLowerCase().replace(/\.$/, '');

function chunks(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += 255) out.push(text.slice(i, i + 255));
  return out.length ? out : [''];
}

const TYPE_NAMES: Record<number, RecordType> = { 1: 'A', 28: 'AAAA', 16: 'TXT', 15: 'MX', 5: 'CNAME', 33: 'SRV', 12: 'PTR' };

export async function startDns(): Promise<TestDns> {
  const zone = new Map<string, Map<RecordType, Value[]>>();
  const failing = new Set<string>();
  const dropping = new Set<string>();
  const queries: string[] = [];

  const handle: Parameters<typeof dns2.createUDPServer>[0] = (request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    if (!question) return send(response);
    const name = norm(question.name);
    const type = TYPE_NAMES[question.type];
    queries.push(`${type ?? question.type} ${name}`);
    const header = response.header;
    header.aa = 1;
    if (dropping.has(name)) return;
    if (failing.has(name)) {
      header.rcode = 2; // SERVFAIL
      return send(response);
    }
    // As a real server does: a name with a CNAME answers any other type with the CNAME, followed as far as
    // the zone goes (RFC 1034 §4.3.2), the target's records under the target's name.
    let owner = question.name;
    let records = zone.get(name);
    for (let hops = 0; type !== 'CNAME' && hops < 8; hops++) {
      const alias = records?.get('CNAME')?.[0] as string | undefined;
      if (!alias) break;
      response.answers.push({ name: owner, type: Packet.TYPE.CNAME, class: Packet.CLASS.IN, ttl: 60, domain: alias });
      owner = alias;
      records = zone.get(norm(alias));
      if (!records) return send(response);
    }
    if (!records) {
      header.rcode = 3; // NXDOMAIN
      return send(response);
    }
    for (const value of (type && records.get(type)) || []) {
      const base = { name: owner, type: question.type, class: Packet.CLASS.IN, ttl: 60 };
      if (type === 'TXT') response.answers.push({ ...base, data: Array.isArray(value) ? value : chunks(value as string) });
      else if (type === 'MX') response.answers.push({ ...base, ...(value as MxValue) });
      else if (type === 'CNAME' || type === 'PTR') response.answers.push({ ...base, domain: value as string });
      else if (type === 'SRV') response.answers.push({ ...base, ...(value as SrvValue) });
      else response.answers.push({ ...base, address: value as string });
    }
    send(response);
  };

  // UDP and TCP must share a port (resolvers retry truncated answers over TCP on the same one): take a
  // free UDP port, then try TCP on it, and start again when another process holds that TCP port.
  let udp: ReturnType<typeof dns2.createUDPServer> | undefined;
  let tcp: ReturnType<typeof dns2.createTCPServer> | undefined;
  let port = 0;
  for (let attempt = 0; !tcp; attempt++) {
    udp = dns2.createUDPServer(handle);
    await udp.listen(0, '127.0.0.1');
    port = (udp.address() as { port: number }).port;
    const candidate = dns2.createTCPServer(handle);
    try {
      await new Promise<void>((resolve, reject) => {
        candidate.once('error', reject);
        candidate.listen(port, '127.0.0.1', () => resolve());
      });
      tcp = candidate;
    } catch (err) {
      udp.close();
      if (attempt >= 20) throw err;
    }
  }
  const [udpServer, tcpServer] = [udp!, tcp];

  return {
    server: { host: '127.0.0.1', port },
    queries,
    set(type, name, values) {
      const n = norm(name);
      if (!zone.has(n)) zone.set(n, new Map());
      zone.get(n)!.set(type, values);
      failing.delete(n);
      dropping.delete(n);
    },
    remove(name, type) {
      const n = norm(name);
      if (type) zone.get(n)?.delete(type);
      else zone.delete(n);
    },
    fail(name) {
      failing.add(norm(name));
    },
    drop(name) {
      dropping.add(norm(name));
    },
    async stop() {
      await Promise.all([new Promise<void>((r) => udpServer.close(() => r())), new Promise<void>((r) => tcpServer.close(() => r()))]);
    },
  };
}
