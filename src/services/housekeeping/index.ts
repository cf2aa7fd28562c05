// The housekeeping area: what the box does to itself — the first start's team and key, retention by plan.
// The top area: it may import any other.
// What other areas, the adapters and appliance.ts may call; a file of another area imports this index only.
export { bootstrapIfEmpty, type BootstrapResult } from './bootstrap.js';
export { RETENTION_JOB, runRetention, scheduleRetention, startRetentionTimer } from './retention.js';
export { backupTo, type BackupResult, restoreFrom } from './backup.js';
export { operatorStatus, type OperatorStatus } from './status.js';
export { backupDirOf, type BackupRecord, lastScheduledBackup, runScheduledBackup, scheduleBackups } from './backup-schedule.js';
