// The sending area: the one send path (API, batch, SMTP submission, system mail; later broadcasts, workflows,
// MCP), delivery jobs, previews and spam score, test mode, quotas and the suppression check, the unsubscribe
// links in mail (issued on the send path, followed through the public pages and the MX).
// Imports the platform and audience areas (the suppression list is the audience's).
// What other areas, the adapters and appliance.ts may call; a file of another area imports this index only.
export { createDeliveryHandler, type LocalDelivery, PROVIDER_BLOCKS_KEEP_MS, pruneProviderBlocks } from './delivery.js';
export { previewEmail, spamPreview } from './email-preview.js';
export {
  emailEventRow, type EmailRow, type RecipientRow, RETURN_PATH_PREFIX, timelineRow, type TimelineRow
} from './email-records.js';
export { deriveEmailStatus, EMAIL_STATUSES } from './email-status.js';
export {
  type AttachmentInput, cancelEmail, DELIVER_JOB, getEmail, listEmailEvents, listEmails, MAX_RECIPIENTS,
  type AfterWrite, type Reader, rescheduleEmail, sendEmail, type SendEmailInput, sendEmails, type Sender, type SendOptions, setTextDeriver
} from './emails.js';
export {
  getHold, getUsage, isSendQuotaRefusal, markEstablished, QUOTA_SMTP_REPLY, releaseHold, setNewSenderPause
} from './quotas.js';
export { readerOf, senderOf } from './principals.js';
export { findSenderDomain } from './sender-domains.js';
export { authenticateSubmitter, type SubmissionStore, submitMessage, type Submitter } from './submission.js';
export { sendSystemEmail } from './system-mail.js';
export { type LinkAnswer, linkPreferences, savePreferencesThroughLink, unsubscribeByMessage, unsubscribeThroughLink } from './unsubscribe-links.js';
export { type HitRequest, recordClick, recordOpen, TRACK_CLICK_PATH, TRACK_OPEN_PATH } from './tracking.js';
export { DEVICES, PROVIDERS } from './tracking-client.js';
