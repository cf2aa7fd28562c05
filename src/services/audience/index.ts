// The audience area: contacts with typed custom properties, manual and dynamic segments (and their SQL
// membership predicates, which broadcasts will use), CSV import and export, subscription topics and each
// contact's choices, the suppression list, and the signed unsubscribe links with the preference page's
// changes (the send path issues the links and adds email.unsubscribed). Imports the platform area only.
// What other areas, the adapters and appliance.ts may call; a file of another area imports this index only.
export { createContact, deleteContact, getContact, listContacts, OPT_IN_STATUSES, updateContact, type Contact, type ContactFilters, type OptInStatus } from './contacts.js';
export { audienceTargets, checkSignupValues, confirmSignupContact, contactForSignup, deleteUnconfirmedContacts, joinAudience, type SignupContact, type SignupValues } from './opt-in.js';
export { exportContacts, importContacts, MAX_IMPORT_ROWS, type ImportResult } from './contacts-csv.js';
export { segmentMembership } from './membership.js';
export { campaignAudience, marketableContactSql, type CampaignAudienceRequest } from './marketable.js';
export { createProperty, deleteProperty, listProperties, PROPERTY_TYPES, updateProperty, type ContactProperty, type PropertyType } from './properties.js';
export { ENGAGEMENT_SEGMENTS, MATCHES, OPERATORS, OPT_IN_SQL, type EngagementSegment, type RuleGroup } from './rules.js';
export { addMembers, createSegment, deleteSegment, getSegment, listMembers, listSegments, previewSegment, removeMembers, updateSegment, type Segment } from './segments.js';
export { addSuppression, createSuppression, deleteSuppression, listSuppressions, suppressedAmong, SUPPRESSION_REASONS, type Suppression, type SuppressionReason } from './suppressions.js';
export { exportSuppressions, importSuppressions, type SuppressionImportResult } from './suppressions-csv.js';
export {
  clearContactSubscription, createTopic, DEFAULT_SUBSCRIPTIONS, deleteTopic, getContactSubscriptions, getTopic, listSubscribers, listTopics,
  setContactSubscriptions, TOPIC_VISIBILITIES, updateTopic, type ContactSubscriptions, type Subscriber, type Topic
} from './topics.js';
export { audienceOfSends, type SendAudience, type SendAudienceRequest } from './send-checks.js';
export { preferencesOf, savePreferences, unsubscribeByLink, type PreferenceChange, type PreferenceView } from './preferences.js';
export {
  readUnsubscribeToken, signUnsubscribeToken, TOKEN_LIFETIME_DAYS, tokenOfAddress, UNSUBSCRIBE_LOCAL_PREFIX, UNSUBSCRIBE_PATH, unsubscribeHeaders, unsubscribeUrl,
  type LinkTarget, type TokenCheck
} from './unsubscribe-tokens.js';
