// The networks the box trusts by client address (MAIL_TRUSTED_NETWORKS): CIDR blocks, IPv4 and IPv6. A client on
// them is the operator's own (a local script, a relay beside the box): the MX greets it without the pregreet pause,
// and other checks may ask the same list. An IPv4 address and its IPv4-mapped IPv6 form (::ffff:a.b.c.d) are the
// same client.
import net from 'node:net';
import { ipv6Bytes } from './ip.js';

/** Loopback only: the default of MAIL_TRUSTED_NETWORKS. */
export const LOOPBACK_NETWORKS: readonly string[] = ['127.0.0.0/8', '::1/128'];

interface Block {
  /** The network's 16 bytes, IPv4 as IPv4-mapped IPv6. */
  bytes: number[];
  /** Leading bits that must match, counted over the 16 bytes. */
  bits: number;
}

/** The 16 bytes of an IP address (IPv4 as ::ffff:a.b.c.d), or null when `ip` is not one. */
function addressBytes(ip: string): number[] | null {
  const text = ip.replace(/%.*$/, '');
  if (net.isIPv4(text)) return [...new Array<number>(10).fill(0), 0xff, 0xff, ...text.split('.').map(Number)];
  if (net.isIPv6(text)) return ipv6Bytes(text);
  return null;
}

/** Reads `address/prefix` (a bare address is one host); throws an Error naming what is wrong. */
export function parseCidr(text: string): Block {
  const [address = '', prefix, extra] = text.trim().split('/');
  if (extra !== undefined) throw new Error(`'${text}' is not address/prefix`);
  const bytes = addressBytes(address);
  if (!bytes) throw new Error(`'${text}': '${address}' is not an IP address`);
  const v4 = net.isIPv4(address);
  const max = v4 ? 32 : 128;
  if (prefix !== undefined && !/^\d{1,3}$/.test(prefix)) throw new Error(`'${text}' has a bad prefix length`);
  const length = prefix === undefined ? max : Number(prefix);
  if (length > max) throw new Error(`'${text}': the prefix length is at most ${max}`);
  return { bytes, bits: v4 ? 96 + length : length };
}

/** A list of networks, asked whether an address is on one of them. */
export class NetworkList {
  private readonly blocks: Block[];

  /** `cidrs` as MAIL_TRUSTED_NETWORKS holds them; throws on a bad one (the config has validated them before). */
  constructor(readonly cidrs: readonly string[]) {
    this.blocks = cidrs.map(parseCidr);
  }

  /** Whether `ip` (as a socket reports it) is on one of the networks; false for anything not an IP address. */
  contains(ip: string | undefined): boolean {
    const bytes = addressBytes(ip ?? '');
    if (!bytes) return false;
    return this.blocks.some((b) => matches(bytes, b));
  }
}

function matches(bytes: number[], block: Block): boolean {
  const whole = block.bits >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== block.bytes[i]) return false;
  const rest = block.bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (bytes[whole]! & mask) === (block.bytes[whole]! & mask);
}
