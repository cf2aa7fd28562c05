// Every event kind the service emits (spec: Events). Webhook subscriptions validate against this list.
export const EMAIL_EVENTS = [
  'email.sent',
  'email.delivered',
  'email.bounced',
  'email.soft_bounced',
  'email.opened',
  'email.clicked',
  'email.complained',
  'email.unsubscribed',
  'email.failed',
  'email.delivery_delayed',
  'email.scheduled',
  'email.suppressed',
  'email.inbound',
] as const;

export const CONTACT_EVENTS = ['contact.created', 'contact.updated', 'contact.deleted', 'contact.unsubscribed'] as const;

export const DOMAIN_EVENTS = [
  'domain.created',
  'domain.updated',
  'domain.deleted',
  'domain.verified',
  'domain.failed',
  'domain.dns_drift',
  'domain.dkim_rotation_started',
  'domain.dkim_rotation_activated',
  'domain.dkim_rotation_completed',
] as const;

export const EVENT_TYPES = [...EMAIL_EVENTS, ...CONTACT_EVENTS, ...DOMAIN_EVENTS, 'broadcast.sent'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
