// NOTIFY channels. Whoever makes work due (ingest, a retry, a resume, a config change, a published
// alert) notifies WORK_CHANNEL after its commit; dispatchers listen on it to claim at once instead
// of waiting for their next poll.

/** Wakes the dispatchers: deliveries may have become due. */
export const WORK_CHANNEL = "sluice_work";

/** Wakes the recovery workers: a recovery was requested (dispatch/recovery.ts). */
export const RECOVERY_CHANNEL = "sluice_recovery";

/**
 * Drops an API key from the auth caches of every API process (api/key-cache.ts): its payload is
 * the id (key_…) of a key just deleted.
 */
export const API_KEYS_CHANNEL = "sluice_api_keys";
