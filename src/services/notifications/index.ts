// The notifications area: webhook endpoints and their signed deliveries, and alerts to the team's owner
// (later: notification channels). Sits above sending, since an alert may be an e-mail.
// What other areas, the adapters and appliance.ts may call; a file of another area imports this index only.
export { deliverWebhook, WebhookSender } from './webhook-delivery.js';
export {
  batchReplay, createWebhook, deleteWebhook, getWebhook, listDeliveries, listWebhooks, replayDelivery,
  rotateWebhookSecret, testWebhook, updateWebhook
} from './webhooks.js';
