// The campaigns area: broadcasts to an audience (segments, a subscription topic), personalised per contact
// with Liquid merge tags, A/B tests decided by open rate on the job clock, fanned out by durable jobs through
// the one send path, and their analytics (opens and clicks as tracking records them). Imports the platform,
// audience, templates and sending areas.
// What other areas, the adapters and appliance.ts may call; a file of another area imports this index only.
export {
  BROADCAST_STATUSES, broadcastsOfSegment, cancelBroadcast, createBroadcast, DEFAULT_TEST_PERCENTAGE, deleteBroadcast, endAbTest, getBroadcast,
  listBroadcasts, MAX_TEST_ADDRESSES, MAX_VARIANTS, MIN_VARIANTS, RESEND_AUDIENCES, resendBroadcast, sendBroadcast, testBroadcast, updateBroadcast,
  type Broadcast, type BroadcastFilters, type BroadcastInput, type BroadcastStatus, type BroadcastUpdate, type ResendAudience
} from './broadcasts.js';
export { broadcastPerformance, broadcastVariants, inactiveRecipients, PERFORMANCE_METRICS, type PerformanceMetric } from './analytics.js';
export { FANOUT_JOB, registerCampaignJobs, SETTLE_JOB, START_JOB, WINNER_JOB } from './fanout.js';
