import { currentQuietWindow, nextQuietStartMs, scheduleApplies, type DeliverySchedule } from "./quiet-hours.js";

// Why an attempt waited before it was sent, for its trace (docs/tracing.md): the time between
// the moment the delivery could first have gone (its publish, or its previous attempt's result)
// and the send, cut into spans each named by what held it then. Holds write nothing to the
// deliveries (architecture.md), so this is worked out at send time from what the claim read: the
// delivery's deliver_at and retry time, and its destination's last throttle hold, last pause and
// quiet hours. Pure; the caller runs it only when tracing is on.

export const WAIT_REASONS = [
  "paused",
  "throttled",
  "quiet_hours",
  "scheduled",
  "retry_scheduled",
  "rate_limited",
  "ordering",
  "concurrency",
] as const;
export type WaitReason = (typeof WAIT_REASONS)[number];

export interface WaitFacts {
  /** When the wait began: the publish for a first attempt, else when the previous attempt's result was written. */
  fromMs: number;
  /** When this attempt's request starts. */
  sendMs: number;
  /** The first attempt's deliver_at (null: none, or not the first attempt). */
  deliverAtMs: number | null;
  /** A retry after a failure: it waited for this time (its next_attempt_at). */
  retryAtMs: number | null;
  /** The destination's throttle hold's end as the claim read it (it stays set once the hold is over). */
  throttledUntilMs: number | null;
  /** The last pause the destination came out of. */
  pause: { fromMs: number; untilMs: number } | null;
  /** The destination's quiet hours, and the delivery's event type (null: none). */
  quiet: { schedule: DeliverySchedule; eventType: string } | null;
  /** The claim found the token buckets holding due work back. */
  rateLimited: boolean;
  ordered: boolean;
}

export interface WaitSegment {
  reason: WaitReason;
  fromMs: number;
  untilMs: number;
}

/**
 * A wait nothing above explains shorter than this is the pipeline's own latency (a claim, a
 * notification), not worth a name; longer, the delivery waited for a send slot.
 */
export const UNNAMED_WAIT_MS = 1000;
/** Quiet windows looked at in one wait: a bound on the loop, far above any real wait's count. */
const MAX_WINDOWS = 64;

/** The wait cut into named, ordered, non-overlapping segments (none when it was not waited). */
export function explainWait(f: WaitFacts): WaitSegment[] {
  const from = f.fromMs;
  const to = f.sendMs;
  if (!(to > from)) return [];
  // Each known hold as an interval, in the order hold_reason names them (policy/hold-reason.ts):
  // where two overlap, the first wins.
  const holds: WaitSegment[] = [];
  const add = (reason: WaitReason, a: number, b: number) => {
    const fromMs = Math.max(a, from);
    const untilMs = Math.min(b, to);
    if (untilMs > fromMs) holds.push({ reason, fromMs, untilMs });
  };
  if (f.pause) add("paused", f.pause.fromMs, f.pause.untilMs);
  // When a hold began is not kept; one that ended after the wait began held it from its start.
  if (f.throttledUntilMs !== null) add("throttled", from, f.throttledUntilMs);
  if (f.quiet && scheduleApplies(f.quiet.schedule, f.quiet.eventType)) {
    let t: number | null = from;
    for (let i = 0; i < MAX_WINDOWS && t !== null && t < to; i++) {
      const w = currentQuietWindow(f.quiet.schedule, t);
      if (w) {
        add("quiet_hours", t, w.endMs);
        t = w.endMs;
      } else t = nextQuietStartMs(f.quiet.schedule, t);
    }
  }
  if (f.deliverAtMs !== null) add("scheduled", from, f.deliverAtMs);
  if (f.retryAtMs !== null) add("retry_scheduled", from, f.retryAtMs);

  const cuts = [...new Set([from, to, ...holds.flatMap((h) => [h.fromMs, h.untilMs])])].sort((a, b) => a - b);
  const residual: WaitReason = f.rateLimited ? "rate_limited" : f.ordered ? "ordering" : "concurrency";
  const out: WaitSegment[] = [];
  for (let i = 0; i + 1 < cuts.length; i++) {
    const a = cuts[i]!;
    const b = cuts[i + 1]!;
    const reason = holds.find((h) => h.fromMs <= a && h.untilMs >= b)?.reason ?? residual;
    const last = out[out.length - 1];
    if (last && last.reason === reason && last.untilMs === a) last.untilMs = b;
    else out.push({ reason, fromMs: a, untilMs: b });
  }
  return out.filter((s) => holds.some((h) => h.reason === s.reason) || s.untilMs - s.fromMs >= UNNAMED_WAIT_MS);
}
