// The inbound area: what the MX receives — recipient routing, authentication, delivery into mailboxes, inbound
// emails and replies to them, bounce/complaint feedback, DMARC reports — and mail the box sends to itself
// (local delivery). Imports the platform, audience and sending areas.
// What other areas, the adapters and appliance.ts may call; a file of another area imports this index only.
export { checkMessage, InboundAuthPool } from './auth.js';
export { type DmarcAggregateReport, dmarcPaging, type DmarcRecord, listDmarcReports } from './dmarc-reports.js';
export { type BounceNotice, type BounceRecipient, type ComplaintNotice } from './feedback.js';
export { getInbound, getInboundAttachments, listInbound } from './inbound-emails.js';
export { createLocalDelivery } from './local-delivery.js';
export { createMailboxDelivery, MailboxFullError } from './mailbox-delivery.js';
export { createInboundReceiver, type InboundReceiver, type Notices } from './receiver.js';
export { draftReply, forwardInbound, replyToInbound } from './replies.js';
export { type RecipientRoute, reservedAddress, routeRecipient } from './routing.js';
