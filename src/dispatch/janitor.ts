import type { Logger } from "pino";
import type { Db } from "../db/db.js";
import { isStoreUnavailable } from "../db/db.js";
import { wakeStranded } from "../db/queries/events.js";

// Retention: finished deliveries, their attempts, events with nothing left to deliver, and old
// idempotency keys are pruned; deliveries held too long for a paused destination are discarded in small batches, by one worker at a time (advisory lock).

const LOCK_KEY = 7_245_003;
const BATCH = 5_000;

export async function pruneOnce(db: Db, retentionHours: number): Promise<{ deliveries: number; attempts: number; events: number; keys: number; pausedDiscarded: number } | null> {
  return db.tx(async (q) => {
    const got = await q.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock($1) AS ok", [LOCK_KEY]);
    if (!got[0]?.ok) return null;
    const cutoff = `now() - make_interval(hours => $1)`;
    const attempts = await q.query<{ n: number }>(
      `WITH d AS (DELETE FROM attempts WHERE ctid IN (SELECT ctid FROM attempts WHERE started_at < ${cutoff} LIMIT $2) RETURNING 1)
       SELECT count(*)::int AS n FROM d`, [retentionHours, BATCH]);
    const deliveries = await q.query<{ n: number }>(
      `WITH d AS (DELETE FROM deliveries WHERE (destination_id, id) IN (
          SELECT destination_id, id FROM deliveries WHERE finished_at < ${cutoff} AND status IN ('delivered', 'discarded', 'dead') LIMIT $2)
        RETURNING 1)
       SELECT count(*)::int AS n FROM d`, [retentionHours, BATCH]);
    const events = await q.query<{ n: number }>(
      `WITH d AS (DELETE FROM events WHERE id IN (
          SELECT e.id FROM events e WHERE e.created_at < ${cutoff}
             AND NOT EXISTS (SELECT 1 FROM deliveries dl WHERE dl.event_id = e.id) LIMIT $2)
        RETURNING 1)
       SELECT count(*)::int AS n FROM d`, [retentionHours, BATCH]);
    // Held for a paused destination longer than its paused_retention_hours: discarded, with the
    // reason on each delivery (still retryable by id). Destination rows are locked first.
    const pausedDiscarded = await q.query<{ n: number }>(
      `WITH p AS (
         SELECT id, paused_at, paused_retention_hours FROM destinations
          WHERE paused_at IS NOT NULL AND paused_at < now() - make_interval(hours => paused_retention_hours)
          ORDER BY id FOR UPDATE SKIP LOCKED
       ), d AS (
         UPDATE deliveries dl
            SET status = 'discarded', finished_at = now(), updated_at = now(),
                last_error = 'discarded: held for over ' || p.paused_retention_hours || ' h while the destination was paused'
           FROM p
          WHERE dl.destination_id = p.id AND dl.status IN ('queued', 'retry_scheduled')
            AND greatest(dl.created_at, p.paused_at) < now() - make_interval(hours => p.paused_retention_hours)
         RETURNING 1)
       SELECT count(*)::int AS n FROM d`);
    const keys = await q.query<{ n: number }>(
      `WITH d AS (DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours' RETURNING 1) SELECT count(*)::int AS n FROM d`);
    return { deliveries: deliveries[0]!.n, attempts: attempts[0]!.n, events: events[0]!.n, keys: keys[0]!.n, pausedDiscarded: pausedDiscarded[0]!.n };
  });
}

export function startJanitor(db: Db, retentionHours: number, log: Logger, everyMs = 5 * 60_000): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout;
  const tick = async () => {
    try {
      // Keep going while full batches come back, so a large backlog drains without a long lock.
      for (let i = 0; i < 20 && !stopped; i++) {
        const r = await pruneOnce(db, retentionHours);
        if (!r) break;
        if (r.deliveries || r.attempts || r.events || r.keys || r.pausedDiscarded) log.info(r, "pruned past retention");
        if (r.deliveries < BATCH && r.attempts < BATCH && r.events < BATCH) break;
      }
    } catch (err) {
      log[isStoreUnavailable(err) ? "debug" : "warn"]({ err }, "pruning failed; will try again");
    }
    if (!stopped) timer = setTimeout(tick, everyMs);
  };
  timer = setTimeout(tick, Math.min(everyMs, 30_000));
  // A wake-up lost to a race the claim's idle re-check did not cover is found here.
  const sweep = setInterval(() => {
    void db.tx((q) => wakeStranded(q))
      .then((n) => { if (n > 0) log.warn({ destinations: n }, "woke idle destinations that had due deliveries waiting"); })
      .catch((err: unknown) => log[isStoreUnavailable(err) ? "debug" : "warn"]({ err }, "stranded-destination sweep failed; will try again"));
  }, 15_000);
  sweep.unref();
  return () => {
    stopped = true;
    clearTimeout(timer);
    clearInterval(sweep);
  };
}
