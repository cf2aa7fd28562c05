// The MTA's contract: given a prepared (signed) message, a destination domain and its recipients, deliver
// and say what happened to each recipient. The MTA never reads or writes an email's status.
import type { BounceCategory } from './bounce.js';

export type TlsMode = 'opportunistic' | 'enforced';

export interface DeliveryRequest {
  /** The recipients' domain: every address in `recipients` is at it. */
  domain: string;
  recipients: string[];
  /** MAIL FROM (the return path). */
  envelopeFrom: string;
  /** The whole RFC 5322 message, already DKIM-signed. */
  raw: Buffer;
  tlsMode: TlsMode;
  /** The sender domain's dedicated address (MAIL_OUTBOUND_IPS): the connection's source and its HELO name. */
  source?: { address: string; helo: string } | undefined;
}

export interface SmtpReplyInfo {
  code?: number | undefined;
  enhanced?: string | undefined;
  message: string;
}

export type RecipientStatus = 'delivered' | 'deferred' | 'bounced';

export interface RecipientOutcome {
  recipient: string;
  /** delivered: the next hop answered 2xx; deferred: try again later (4xx, connection trouble); bounced: 5xx or a permanent DNS answer. */
  status: RecipientStatus;
  reply: SmtpReplyInfo;
  /** RFC 3463 code, e.g. "5.1.1" (derived from the basic code when the server sent none). */
  code: string;
  /** Set for deferred and bounced. */
  category?: BounceCategory;
}

export interface RouteTaken {
  /**
   * direct: the recipient domain's MX; relay: a smarthost (the global one or a named route); local: an address
   * this box serves, delivered without leaving it (services/inbound/local-delivery.ts).
   */
  kind: 'direct' | 'relay' | 'local';
  /** Name of the route rule that chose a relay, or "default". */
  name: string;
  /** Host and port the message went to (the last one tried). */
  host?: string;
  port?: number;
  /** The session was encrypted (STARTTLS or implicit TLS). */
  tls: boolean;
}

export interface DeliveryResult {
  route: RouteTaken;
  outcomes: RecipientOutcome[];
}

export interface Mta {
  deliver(request: DeliveryRequest): Promise<DeliveryResult>;
  /** Closes pooled connections. */
  close(): Promise<void>;
}
