// NOTIFY channels. Whoever makes work due (ingest, a retry, a resume, a config change, a published
// alert) notifies WORK_CHANNEL after its commit; dispatchers listen on it to claim at once instead
// of waiting for their next poll.

/** Wakes the dispatchers: deliveries may have become due. */
export const WORK_CHANNEL = "sluice_work";
