// Mail from the box to an address the box itself serves — a mailbox, an alias or catch-all, or an address of a
// domain whose inbound mail goes to webhooks — is delivered here, through the same receiver as the MX
// (services/inbound/receiver.ts: authentication, trace headers, filters, inbound emails), not over the network. A
// mailbox writing to a colleague on the same box must not depend on port 25 of MAIL_HOSTNAME reaching the MX
// (outside Docker the MX listens on 2525 by default) nor leave the box at all.
//
// Only verified domains, and only recipients the box would accept at RCPT: a domain a team has merely added
// (it could name anyone's domain), an address no mailbox or route serves, a bounce or report address, all go
// out by MX as before; so does a verified domain whose mail is served elsewhere.
import type { AppContext } from '../../context.js';
import { forgetfulCachePer } from '../../core/forgetful-cache.js';
import { readsOf } from '../../db/index.js';
import type { MailStore } from '../../mailstore/types.js';
import type { DeliveryResult, RecipientOutcome } from '../../mta/types.js';
import type { InboundReceiver } from './receiver.js';
import { MailboxFullError } from './mailbox-delivery.js';
import { routeRecipient, type RecipientRoute } from './routing.js';
import type { LocalDelivery } from '../sending/index.js';

/** The route of a local delivery in the email's timeline and events (`via`). */
export const LOCAL_ROUTE = 'local';

/** Routes delivered locally: a mailbox copy or an inbound email (not the box's own report addresses). */
type LocalRoute = Extract<RecipientRoute, { kind: 'mailbox' | 'webhook' }>;

/** A recipient the box serves: its route, or why it cannot take the message now (a full mailbox). */
export type LocalRecipient = { address: string; route: LocalRoute } | { address: string; full: true };

// One entry, every verified domain name: up to 16 MiB (~200,000 names); a box with more reads them per message.
const verifiedNamesOf = forgetfulCachePer<AppContext, 'verified', Set<string>>(5_000, 1, (ctx) => ctx.domainChanges, 16 * 1024 * 1024);

/** The names of the verified domains on the box (remembered a few seconds; forgotten on any domain change). */
function verifiedNames(ctx: AppContext): Promise<Set<string>> {
  return verifiedNamesOf(ctx).get('verified', async () => {
    const rows = await readsOf(ctx.db)<{ name: string; status: string }>('domains').where({ status: 'verified' }).select('name');
    return new Set(rows.map((r) => r.name));
  });
}

export function createLocalDelivery(ctx: AppContext, store: MailStore, receiver: InboundReceiver): LocalDelivery<LocalRecipient> {
  const hostname = ctx.config.hostname;
  const route = { kind: 'local', name: LOCAL_ROUTE, host: hostname, tls: false } as const;

  async function recipients(domain: string, addresses: string[]): Promise<LocalRecipient[]> {
    if (!(await verifiedNames(ctx)).has(domain)) return [];
    const local: LocalRecipient[] = [];
    for (const address of addresses) {
      const r = await routeRecipient(ctx, store, address);
      if (r.kind === 'mailbox_full') local.push({ address, full: true });
      else if (r.kind === 'mailbox' || (r.kind === 'webhook' && !r.feedbackLoop)) local.push({ address, route: r });
    }
    return local;
  }

  const outcome = (address: string, o: Omit<RecipientOutcome, 'recipient'>): RecipientOutcome => ({ recipient: address, ...o });
  const mailboxFull = (address: string) => outcome(address, { status: 'deferred', code: '4.2.2', category: 'mailbox_full', reply: { code: 452, enhanced: '4.2.2', message: '4.2.2 Mailbox full, try again later' } });

  async function deliver(raw: Buffer, envelopeFrom: string, to: LocalRecipient[]): Promise<DeliveryResult> {
    const full = to.filter((r) => 'full' in r);
    const routes = to.flatMap((r) => ('route' in r ? [r.route] : []));
    const outcomes = full.map((r) => mailboxFull(r.address));
    if (routes.length === 0) return { route, outcomes };
    return { route, outcomes: [...outcomes, ...(await receive(raw, envelopeFrom, routes))] };
  }

  /**
   * One receiver call for all of them (one stored copy). A mailbox the message would push over its quota refuses
   * the whole call, storing nothing (the MX's rule for one transaction); here each recipient then goes on its own,
   * so that only those mailboxes wait.
   */
  async function receive(raw: Buffer, envelopeFrom: string, routes: LocalRoute[]): Promise<RecipientOutcome[]> {
    const outcomes: RecipientOutcome[] = [];
    const addresses = routes.map((r) => r.address);
    try {
      const result = await receiver.receive({ raw, mailFrom: envelopeFrom, routes, client: { ip: '127.0.0.1', helo: hostname, tls: true, local: true }, notices: {} });
      for (const address of addresses) {
        // A local message is never refused for DMARC (receiver.ts, `local`): anything but accepted is a surprise.
        outcomes.push(
          result.status === 'accepted'
            ? outcome(address, { status: 'delivered', code: '2.0.0', reply: { code: 250, enhanced: '2.0.0', message: `2.0.0 Ok: delivered on this box as ${result.queueId}` } })
            : outcome(address, { status: 'deferred', code: '4.7.0', category: 'policy', reply: { code: 451, enhanced: '4.7.0', message: `4.7.0 ${result.message}` } }),
        );
      }
    } catch (err) {
      if (err instanceof MailboxFullError) {
        if (routes.length === 1) return [mailboxFull(routes[0]!.address)];
        return (await Promise.all(routes.map((r) => receive(raw, envelopeFrom, [r])))).flat();
      }
      ctx.log.error({ err, recipients: addresses }, 'local delivery failed; it will be retried');
      const message = `4.3.0 Local delivery failed: ${err instanceof Error ? err.message : String(err)}`;
      for (const address of addresses) outcomes.push(outcome(address, { status: 'deferred', code: '4.3.0', category: 'unknown', reply: { code: 451, enhanced: '4.3.0', message } }));
    }
    return outcomes;
  }

  return { recipients, deliver };
}
