import type { HoldReason, WaitingStatus } from "./statuses.js";

// Why a waiting delivery is held: the one classification behind both the API's hold_reason
// (api/serialize.ts, one delivery) and the sluice_held gauge (db/queries/stats.ts, which groups
// every waiting delivery by these facts and classifies each group here). Pure: the facts are
// worked out by the caller at one `now`.

export interface HoldFacts {
  status: WaitingStatus;
  /** attempts > 0: a request was started for it before. */
  attempted: boolean;
  /** next_attempt_at <= now. */
  due: boolean;
  /** The destination is paused. */
  paused: boolean;
  /** The destination's throttle hold is in force (throttled_until > now). */
  throttled: boolean;
  /** Its quiet hours hold this delivery's event type and the window is open now. */
  quiet: boolean;
  /** Ordered destination, and an earlier unfinished delivery goes first. */
  behind: boolean;
  /** The destination's in-flight deliveries fill its cap (ordered: 1; else the ramp or max_concurrency). */
  atCap: boolean;
  /** The last claim found due work that the token buckets held back. */
  rateLimited: boolean;
}

/** The first reason that holds, in the order of HOLD_REASONS; null: not held (it goes when claimed). */
export function holdReason(f: HoldFacts): HoldReason | null {
  if (f.paused) return "paused";
  if (f.throttled) return "throttled";
  if (f.quiet && f.due) return "quiet_hours";
  // Only a first attempt waits for its deliver_at; a retry waiting for its time is retry_scheduled.
  if (f.status === "queued" && !f.attempted && !f.due) return "scheduled";
  if (f.behind) return "ordering";
  if (f.atCap && f.due) return "concurrency";
  if (f.rateLimited && f.due) return "rate_limited";
  return null;
}
