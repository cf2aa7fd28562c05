// The notifications area: webhook endpoints and their signed deliveries, alerts to the team's owner, and
// notification channels fed by the alerts of every area. Sits above sending, since an alert may be an e-mail.
// What other areas, the adapters and appliance.ts may call; a file of another area imports this index only.
export { deliverWebhook, WebhookSender } from './webhook-delivery.js';
export {
  batchReplay, createWebhook, deleteWebhook, getWebhook, listDeliveries, listWebhooks, replayDelivery,
  rotateWebhookSecret, testWebhook, updateWebhook
} from './webhooks.js';
export { ALERT_DISPATCH_JOB, AlertWaker, dispatchAlerts } from './alert-dispatch.js';
export { CHANNEL_TYPES, type ChannelType, deliverNotification, NOTIFY_DELIVER_JOB } from './channel-delivery.js';
export {
  createChannel, deleteChannel, listChannelDeliveries, listChannels, MAX_CHANNELS, replayChannelDelivery, testChannel,
  updateChannel
} from './channels.js';
