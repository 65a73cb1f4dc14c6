import { classify, type Outcome } from "../policy/outcome.js";
import { retryDelaySeconds } from "../policy/retry-schedule.js";
import { retryAfterWaitSeconds } from "../policy/retry-after.js";
import { throttleHoldSeconds, throttleReason } from "../policy/throttle.js";
import { applyOutcomes, healthClass, healthStateOf, DEFAULT_HEALTH_CONFIG, type HealthConfig } from "../policy/health.js";
import type { DeliveryUpdate, AttemptRow, DestinationUpdate, LockedDestinationState } from "../db/queries/results.js";
import type { SendResult } from "../delivery/sender.js";
import { adaptPace, adaptiveOn, paceBounds, paceWithin, type PaceSignal } from "../policy/adaptive-pace.js";

// Turns finished sends into the rows to write: pure, so the rules are testable without a
// database. The database layer applies these decisions; it does not re-derive them.

export interface FinishedSend {
  destinationId: string;
  deliveryId: string;
  leaseToken: string;
  attemptNo: number;
  /** Failed attempts before this one. */
  failuresBefore: number;
  retrySchedule: number[];
  throttleSchedule: number[];
  startedAt: Date;
  /** When the delivery's event was published (the claim's created_ms). */
  publishedMs: number;
  result: SendResult;
  /** The attempt's trace, for its log line (docs/logs.md): the attempt span's, or the stored caller's trace id alone. */
  trace?: { trace_id: string; span_id?: string };
}

export interface Decision {
  delivery: DeliveryUpdate;
  attempt: AttemptRow;
  outcome: Outcome;
}

export function decideDelivery(f: FinishedSend, nowMs: number, random: () => number = Math.random): Decision {
  const outcome = classify(f.result, nowMs);
  const base = { destinationId: f.destinationId, id: f.deliveryId, leaseToken: f.leaseToken, statusCode: outcome.statusCode };
  let delivery: DeliveryUpdate;
  switch (outcome.kind) {
    case "success":
      delivery = { ...base, status: "delivered", delaySeconds: null, failed: false, error: null };
      break;
    case "throttled":
      // Not a failure and no retry spent: the delivery waits for the destination's hold to end.
      delivery = { ...base, status: "queued", delaySeconds: null, failed: false, error: describe(f.result, outcome) };
      break;
    case "gone":
      // 410 pauses the destination; the delivery is held with it.
      delivery = { ...base, status: "queued", delaySeconds: null, failed: true, error: describe(f.result, outcome) };
      break;
    case "failure": {
      if (outcome.errorClass === "blocked") {
        // Our own network policy refused the address: that pauses the destination at once (like
        // 410), and the delivery is held with it rather than spending retries on a fixed refusal.
        delivery = { ...base, status: "queued", delaySeconds: null, failed: true, error: describe(f.result, outcome) };
        break;
      }
      const failures = f.failuresBefore + 1;
      const delay = retryDelaySeconds(f.retrySchedule, failures, random);
      if (delay === null) {
        delivery = { ...base, status: "dead", delaySeconds: null, failed: true, error: describe(f.result, outcome) };
      } else {
        // A 503's Retry-After of "now" still waits the floor: no tight loop against a struggling endpoint.
        const wait = outcome.retryAfterSeconds !== null ? retryAfterWaitSeconds(outcome.retryAfterSeconds) : delay;
        delivery = { ...base, status: "retry_scheduled", delaySeconds: wait, failed: true, error: describe(f.result, outcome) };
      }
      break;
    }
  }
  const attempt: AttemptRow = {
    destinationId: f.destinationId,
    deliveryId: f.deliveryId,
    attemptNo: f.attemptNo,
    startedAt: f.startedAt,
    latencyMs: Math.round(f.result.latencyMs),
    queuedMs: Math.max(0, Math.round(f.startedAt.getTime() - f.publishedMs)),
    outcome: outcome.kind === "success" ? "success" : outcome.kind === "throttled" ? "throttled" : "failure",
    statusCode: outcome.statusCode,
    errorClass: outcome.errorClass,
    errorMessage: f.result.errorMessage,
    healthClass: healthClass(outcome),
    responseBody: f.result.responseBody === "" ? null : f.result.responseBody,
  };
  return { delivery, attempt, outcome };
}

function describe(r: SendResult, o: Outcome): string {
  if (r.statusCode !== null) {
    const ra = o.retryAfterSeconds;
    return `HTTP ${r.statusCode}${ra === null ? "" : ra === 0 ? ` (Retry-After: now; waiting ${retryAfterWaitSeconds(0)} s)` : ` (Retry-After ${ra} s)`}`;
  }
  return `${o.errorClass ?? "error"}: ${r.errorMessage ?? "no answer"}`;
}

/**
 * Folds a destination's outcomes (in completion order) into its new counters, throttle hold,
 * health and pause decision. 429s from requests that started before the current hold began
 * belong to the same episode and do not escalate the schedule again; they never touch health.
 * A 429 whose Retry-After says "now" (0 or a date not in the future) holds only the floor and
 * does not count toward the escalation either: the receiver named the time, we did not guess it.
 */
export function decideDestination(
  state: LockedDestinationState,
  outcomes: { outcome: Outcome; startedAt: Date; throttleSchedule: number[]; errorMessage?: string | null; latencyMs?: number }[],
  healthConfig: HealthConfig = DEFAULT_HEALTH_CONFIG,
): DestinationUpdate {
  const nowMs = state.now.getTime();
  // Adaptive pace learns from the same answers. A 429 without Retry-After then cuts the pace
  // instead of holding the whole destination on the throttle schedule — unless the pace is at its
  // minimum already: a receiver that refuses even that gets the usual escalating holds.
  let pace: ReturnType<typeof adaptPace> | null = null;
  let paceAbsorbs429 = false;
  if (adaptiveOn(state.adaptive)) {
    const bounds = paceBounds(state.adaptive, state.rate_limit, state.max_concurrency);
    paceAbsorbs429 = paceWithin(state.pace_state, bounds, nowMs).rate > bounds.minRate;
    pace = adaptPace(state.pace_state, bounds, outcomes.map(paceSignal), nowMs);
  }
  const health = applyOutcomes(
    healthStateOf(state),
    outcomes.map((o) => ({ ...o.outcome, errorMessage: o.errorMessage ?? null })),
    healthConfig,
    { paused: state.paused_at !== null },
  );
  let throttles = state.consecutive_throttles;
  let throttleSeconds: number | null = null;
  let reason: string | null = null;
  let holdStartMs = state.throttled_until ? -Infinity : null; // a hold exists: its start is unknown but past
  for (const { outcome, startedAt, throttleSchedule } of outcomes) {
    switch (outcome.kind) {
      case "success":
        throttles = 0;
        break;
      case "throttled": {
        if (paceAbsorbs429 && outcome.retryAfterSeconds === null) break;
        const sameEpisode =
          (state.throttled_until !== null && state.throttled_until.getTime() > startedAt.getTime()) ||
          (holdStartMs !== null && holdStartMs > startedAt.getTime());
        const retryNow = outcome.retryAfterSeconds === 0;
        if (!sameEpisode && !retryNow) throttles++;
        const hold = throttleHoldSeconds(throttleSchedule, Math.max(throttles, 1), outcome.retryAfterSeconds);
        // The reason names the hold that wins (the longest), the latest on a tie.
        if (throttleSeconds === null || hold >= throttleSeconds) {
          reason = throttleReason({
            holdSeconds: hold,
            consecutive: Math.max(throttles, 1),
            retryAfterSeconds: outcome.retryAfterSeconds,
            retryAfterHeader: outcome.retryAfterHeader ?? null,
          });
        }
        throttleSeconds = Math.max(throttleSeconds ?? 0, hold);
        // Only a counted 429 opens an episode: a "retry now" must not hide the next real one.
        if (!retryNow) holdStartMs = nowMs;
        break;
      }
      default:
        break;
    }
  }
  // The write keeps a hold already in force that ends later than the new one (it never shortens a
  // hold); the reason then stays that hold's too, not e.g. "holding 1 s" beside a 300 s hold.
  const kept =
    throttleSeconds !== null && state.throttled_until !== null && state.throttled_until.getTime() > nowMs + throttleSeconds * 1000;
  const throttleReasonOut = kept ? null : reason;
  // A probe's ramp: each success lets one more request run at once, up to the configured cap.
  let rampLimit = state.ramp_limit;
  if (rampLimit !== null) {
    rampLimit += outcomes.filter((o) => o.outcome.kind === "success").length;
    if (rampLimit >= state.max_concurrency) rampLimit = null;
  }
  return {
    id: state.id,
    consecutiveFailures: health.state.consecutiveFailures,
    consecutiveAuthFailures: health.state.consecutiveAuthFailures,
    healthWindow: health.state.window,
    healthStatus: health.state.status,
    consecutiveThrottles: throttles,
    throttleSeconds,
    throttleReason: throttleReasonOut,
    pauseReason: health.pause?.reason ?? null,
    pauseCause: health.pause?.cause ?? null,
    pauseCode: health.pause?.code ?? null,
    transition: health.transition,
    score: health.score,
    rampLimit,
    paceState: pace?.state ?? null,
    paceChange: pace?.change ?? null,
  };
}

function paceSignal(o: { outcome: Outcome; startedAt: Date; latencyMs?: number }): PaceSignal {
  return {
    kind: o.outcome.kind,
    statusCode: o.outcome.statusCode,
    errorClass: o.outcome.errorClass,
    startedAtMs: o.startedAt.getTime(),
    latencyMs: o.latencyMs ?? 0,
  };
}
