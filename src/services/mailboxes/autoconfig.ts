// Client autoconfiguration: the documents mail clients fetch to find the box's IMAP, POP3 and SMTP
// submission servers from nothing but an address. Thunderbird's autoconfig (config-v1.1.xml, also used by
// K-9/Thunderbird for Android, Evolution and others) and Microsoft's Autodiscover "POX" (Outlook, iOS
// Mail's Exchange probe). Pure: config and an address in, XML out. Host and ports come from the config.
import type { Config } from '../../config.js';
import { normaliseAddress } from '../../core/address.js';

export type ClientPorts = Pick<Config, 'hostname' | 'imapPort' | 'imapsPort' | 'pop3Port' | 'pop3sPort' | 'submissionPort' | 'submissionsPort'>;

/** Autodiscover's own schema names (MS-OXDSCLI). */
export const AUTODISCOVER_RESPONSE_NS = 'http://schemas.microsoft.com/exchange/autodiscover/responseschema/2006';
export const AUTODISCOVER_OUTLOOK_NS = 'http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a';

const xmlEscape = (s: string) =>
  s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!);

/** Lines of XML, indented by depth. */
const el = (depth: number, name: string, value: string | number) => `${'  '.repeat(depth)}<${name}>${xmlEscape(String(value))}</${name}>`;

/**
 * Thunderbird autoconfig (https://wiki.mozilla.org/Thunderbird:Autoconfiguration:ConfigFileFormat): implicit
 * TLS first, then STARTTLS, for IMAP, POP3 and SMTP; the login is the full address (`%EMAILADDRESS%`).
 * `address` (the `emailaddress` query parameter) names the provider's domain; without it, the box's own name.
 */
export function thunderbirdConfig(ports: ClientPorts, address: string | null): string {
  const domain = address ? address.slice(address.lastIndexOf('@') + 1) : ports.hostname;
  const server = (kind: 'incomingServer' | 'outgoingServer', type: string, port: number, socketType: 'SSL' | 'STARTTLS', extra: string[] = []) => [
    `    <${kind} type="${type}">`,
    el(3, 'hostname', ports.hostname),
    el(3, 'port', port),
    el(3, 'socketType', socketType),
    el(3, 'authentication', 'password-cleartext'),
    el(3, 'username', '%EMAILADDRESS%'),
    ...extra,
    `    </${kind}>`,
  ];
  const leaveOnServer = ['      <pop3>', el(4, 'leaveMessagesOnServer', 'true'), '      </pop3>'];
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<clientConfig version="1.1">',
    `  <emailProvider id="${xmlEscape(domain)}">`,
    el(2, 'domain', domain),
    el(2, 'displayName', domain),
    el(2, 'displayShortName', domain),
    ...server('incomingServer', 'imap', ports.imapsPort, 'SSL'),
    ...server('incomingServer', 'imap', ports.imapPort, 'STARTTLS'),
    ...server('incomingServer', 'pop3', ports.pop3sPort, 'SSL', leaveOnServer),
    ...server('incomingServer', 'pop3', ports.pop3Port, 'STARTTLS', leaveOnServer),
    ...server('outgoingServer', 'smtp', ports.submissionsPort, 'SSL'),
    ...server('outgoingServer', 'smtp', ports.submissionPort, 'STARTTLS'),
    '  </emailProvider>',
    '</clientConfig>',
    '',
  ].join('\n');
}

/** The `EMailAddress` of an Autodiscover POX request body, or null when there is none. */
export function autodiscoverRequestAddress(xml: string): string | null {
  // The request is a tiny fixed document (MS-OXDSCLI §2.2.3); a namespace prefix may be used.
  const m = /<(?:[\w.-]+:)?EMailAddress\s*>([^<]{1,320})<\/(?:[\w.-]+:)?EMailAddress\s*>/i.exec(xml);
  return m ? decodeXmlText(m[1]!.trim()) : null;
}

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Character data with its entity and character references decoded (`a&amp;b` → `a&b`). */
function decodeXmlText(text: string): string {
  return text.replace(/&(?:#x([0-9a-f]{1,6})|#([0-9]{1,7})|(amp|lt|gt|quot|apos));/gi, (ref, hex?: string, dec?: string, name?: string) => {
    if (name) return XML_ENTITIES[name.toLowerCase()] ?? ref;
    const code = hex ? parseInt(hex, 16) : Number(dec);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : ref;
  });
}

/**
 * The Autodiscover POX answer (MS-OXDSCLI, "outlook" response schema 2006a) for a valid address: IMAP and
 * POP3 over implicit TLS, SMTP submission over implicit TLS (SSL on) and on the STARTTLS port
 * (`Encryption` TLS), login name the full address. `null` address: the schema's error 600 (Invalid Request).
 */
export function autodiscoverResponse(ports: ClientPorts, address: string | null, at: Date): string {
  const head = ['<?xml version="1.0" encoding="utf-8"?>', `<Autodiscover xmlns="${AUTODISCOVER_RESPONSE_NS}">`];
  if (!address) {
    return [
      ...head,
      '  <Response>',
      `    <Error Time="${at.toISOString().slice(11, 23)}" Id="2477272013">`,
      el(3, 'ErrorCode', 600),
      el(3, 'Message', 'Invalid Request'),
      '      <DebugData />',
      '    </Error>',
      '  </Response>',
      '</Autodiscover>',
      '',
    ].join('\n');
  }
  const protocol = (type: string, port: number, tls: 'ssl' | 'starttls') => [
    '      <Protocol>',
    el(4, 'Type', type),
    el(4, 'Server', ports.hostname),
    el(4, 'Port', port),
    el(4, 'DomainRequired', 'off'),
    el(4, 'LoginName', address),
    el(4, 'SPA', 'off'),
    ...(tls === 'ssl' ? [el(4, 'SSL', 'on')] : [el(4, 'SSL', 'off'), el(4, 'Encryption', 'TLS')]),
    el(4, 'AuthRequired', 'on'),
    '      </Protocol>',
  ];
  return [
    ...head,
    `  <Response xmlns="${AUTODISCOVER_OUTLOOK_NS}">`,
    '    <User>',
    el(3, 'DisplayName', address),
    el(3, 'AutoDiscoverSMTPAddress', address),
    '    </User>',
    '    <Account>',
    el(3, 'AccountType', 'email'),
    el(3, 'Action', 'settings'),
    ...protocol('IMAP', ports.imapsPort, 'ssl'),
    ...protocol('POP3', ports.pop3sPort, 'ssl'),
    ...protocol('SMTP', ports.submissionsPort, 'ssl'),
    ...protocol('SMTP', ports.submissionPort, 'starttls'),
    '    </Account>',
    '  </Response>',
    '</Autodiscover>',
    '',
  ].join('\n');
}

/** A client-supplied address, normalised; null when absent or not an address. */
export function clientAddress(value: string | null | undefined): string | null {
  if (!value) return null;
  const address = normaliseAddress(value.trim());
  return address ? address.toLowerCase() : null;
}
