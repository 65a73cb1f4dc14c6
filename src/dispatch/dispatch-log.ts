import type { Logger } from "pino";
import type { LockedDestinationState, DestinationUpdate } from "../db/queries/results.js";
import type { HoldTransition } from "./claim-plan.js";
import type { Decision, FinishedSend } from "./decide.js";

// Log lines (docs/logs.md): one per attempt that did not succeed, one per state transition.
// Ids, status, classes and times only — never payloads, response bodies, headers or secrets.

export function logAttempt(
  log: Logger,
  d: Decision & { f: FinishedSend },
  state: LockedDestinationState | undefined,
  landed: boolean,
): void {
  // Successes are most results: build nothing for a line the level drops.
  if (landed && d.outcome.kind === "success" && !log.isLevelEnabled("debug")) return;
  const fields = {
    tenant_id: state?.tenant_id,
    destination_id: d.f.destinationId,
    delivery_id: d.f.deliveryId,
    attempt: d.f.attemptNo,
    status_code: d.outcome.statusCode,
    error_class: d.outcome.errorClass,
    latency_ms: Math.round(d.f.result.latencyMs),
    ...d.f.trace,
  };
  if (!landed) {
    // The lease expired first: the delivery was handed back and is someone else's now.
    log.info({ ...fields, next: "none: lease expired before the result was recorded" }, "attempt result too late");
    return;
  }
  switch (d.outcome.kind) {
    case "success":
      log.debug(fields, "attempt delivered");
      return;
    case "throttled":
      log.info(
        { ...fields, retry_after_seconds: d.outcome.retryAfterSeconds, next: "waits for the destination's throttle hold" },
        "attempt throttled",
      );
      return;
    default: {
      const { status, delaySeconds } = d.delivery;
      const next = status === "dead" ? "dead" : status === "retry_scheduled" ? "retry" : "held while the destination is paused";
      // The store set next_attempt_at from its own now(), which state.now is (same transaction).
      const retryAt =
        status === "retry_scheduled" && delaySeconds !== null && state
          ? new Date(state.now.getTime() + delaySeconds * 1000).toISOString()
          : undefined;
      log.info({ ...fields, next, ...(retryAt ? { retry_at: retryAt } : {}) }, "attempt failed");
    }
  }
}

export function logDestinationUpdate(log: Logger, s: LockedDestinationState, u: DestinationUpdate): void {
  const ids = { tenant_id: s.tenant_id, destination_id: s.id };
  if (u.paceChange && u.paceState) {
    // A cut is news (the receiver pushed back); a raise happens every second while it climbs.
    const fields = { ...ids, rate_per_second: u.paceState.rate, concurrency: u.paceState.concurrency, reason: u.paceState.reason };
    if (u.paceChange.direction === "down") log.info(fields, "adaptive pace cut");
    else log.debug(fields, "adaptive pace raised");
  }
  if (u.throttleSeconds !== null) {
    // The write keeps a longer hold already in force (same now(): one transaction), so only a
    // new or longer hold changes anything. A longer one with the same reason is the same
    // episode's other in-flight requests answering 429 too: not a new transition.
    const untilMs = s.now.getTime() + u.throttleSeconds * 1000;
    const inForce = s.throttled_until !== null && s.throttled_until > s.now;
    if (s.throttled_until === null || untilMs > s.throttled_until.getTime()) {
      const fields = {
        ...ids,
        throttled_until: new Date(untilMs).toISOString(),
        hold_seconds: u.throttleSeconds,
        reason: u.throttleReason,
        extended: inForce,
      };
      if (!inForce || u.throttleReason !== (s.throttle_reason ?? null)) log.info(fields, "destination throttled");
      else log.debug(fields, "throttle hold extended");
    }
  }
  if (u.transition === "paused") {
    log.warn(
      {
        ...ids,
        by: "health",
        reason: u.pauseReason,
        cause: u.pauseCause,
        code: u.pauseCode,
        score: u.score,
        consecutive_failures: u.consecutiveFailures,
      },
      "destination paused",
    );
  } else if (u.transition === "degraded") {
    log.warn(
      { ...ids, health_status: u.healthStatus, score: u.score, consecutive_failures: u.consecutiveFailures },
      "destination degraded",
    );
  }
}

export function logHoldTransition(log: Logger, t: HoldTransition): void {
  const ids = { tenant_id: t.destination.tenant_id, destination_id: t.destination.id };
  if (t.kind === "rate_limited") {
    if (t.holding) log.info({ ...ids, rate_limit: t.destination.rate_limit }, "destination rate-limited: backlog waiting for tokens");
    else log.info(ids, "rate limit no longer holding");
  } else if (t.holding) {
    log.info(
      { ...ids, quiet_until: t.until?.toISOString() ?? null, timezone: t.destination.delivery_schedule?.timezone },
      "quiet hours: holding deliveries",
    );
  } else {
    const w = t.window ? { quiet_from: new Date(t.window.startMs).toISOString(), quiet_until: new Date(t.window.endMs).toISOString() } : {};
    log.info({ ...ids, ...w }, "quiet hours: releasing held deliveries");
  }
}
