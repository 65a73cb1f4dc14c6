// Adaptive pace: each destination finds its own rate and concurrency from its answers (AIMD).
// Pure: state, bounds, signals and the time in; new state and what changed out.
//
// - Cut (multiplicative decrease, × cutFactor) on a 429, a 503, a timeout, or recent latency well
//   above the destination's own baseline (or above target_latency_ms when set). Answers to requests
//   that started before the last cut belong to that episode and do not cut again, and there is at
//   most one cut per cutEveryMs: a receiver's own window (often a second) still remembers the load
//   from before the cut, and cutting on each of its answers would crash the pace to the minimum.
// - Raise once per RAISE_INTERVAL_MS while answers are fast and successful and the destination
//   actually used most of its pace (a destination without backlog never climbs on no evidence):
//   × PROBE_GROWTH until the first cut (finding the capacity fast), then + STEP_SHARE of the pace
//   at the last cut (additive, probing gently near the capacity found), and back to × PROBE_GROWTH
//   once the pace passes well above that point, or goes reprobeAfterMs without a cut (the capacity
//   is higher than found: it went up, or the cut was a passing hiccup).
// - Two cuts at about the same pace confirm a capacity: near it the step shrinks (the pace stays
//   just below it instead of climbing back into the 429s every few seconds), and going
//   reprobeAfterMs without a cut reprobes only once the pace is reprobePast it.
// - Latency cuts only once it has stayed slow for slowForMs: a stall of our own (GC, a busy event
//   loop) slows every answer at once for a moment, and is not the receiver's capacity.
// - Concurrency follows the pace by Little's law: pace × baseline latency × CONCURRENCY_HEADROOM,
//   so rising latency limits the load before the latency signal even fires.
// Never outside [min_per_second, max_per_second], never above a fixed rate_limit or max_concurrency.

import type { RateLimit } from "../schemas/destinations.js";

export interface AdaptiveConfig {
  enabled: boolean;
  min_per_second?: number;
  max_per_second?: number;
  target_latency_ms?: number;
}

export interface PaceBounds {
  minRate: number;
  maxRate: number;
  maxConcurrency: number;
  targetLatencyMs: number | null;
}

/** Stored in destinations.pace_state (JSON): the controller's whole memory. */
export interface PaceState {
  /** Sends per second now. */
  rate: number;
  /** Requests in flight at once now. */
  concurrency: number;
  /** Growing multiplicatively (no cut yet, or past the last cut's pace): see PROBE_GROWTH. */
  probing: boolean;
  /** The pace when it was last cut: where trouble began. */
  ceiling: number | null;
  /**
   * The last two cuts came at about the same pace: that is the receiver's capacity, not a passing
   * hiccup. Near it the pace then climbs slowly, and it probes past it only once well above it.
   * (Absent in states stored before it existed: false.)
   */
  confirmed?: boolean;
  /** Low-water latency of successes (ms), rising slowly when the destination got slower for good. */
  baselineMs: number | null;
  baselineAtMs: number | null;
  /** Recent latency of successes (ms, moving average) from requests started after the last cut. */
  recentMs: number | null;
  recentN: number;
  /** Since when recent latency has been above the slow mark (null: it is not). */
  slowSinceMs?: number | null;
  /** The raise window: since when successes are counted, and how many. */
  windowStartMs: number;
  windowOk: number;
  /** When the pace was last cut: answers to requests started before it do not cut again. */
  cutAtMs: number | null;
  changedAtMs: number;
  reason: string;
}

export type PaceCause = "429" | "503" | "timeout" | "latency";

export interface PaceSignal {
  kind: "success" | "throttled" | "gone" | "failure";
  statusCode: number | null;
  errorClass: string | null;
  startedAtMs: number;
  latencyMs: number;
}

export interface PaceChange {
  direction: "up" | "down";
  cause: PaceCause | "fast";
  from: number;
  to: number;
}

export const PACE = {
  defaultMinPerSecond: 1,
  defaultMaxPerSecond: 1000,
  startPerSecond: 10,
  cutFactor: 0.8,
  cutEveryMs: 1000,
  raiseIntervalMs: 1000,
  probeGrowth: 1.5,
  stepShare: 0.02,
  /** Two cuts within this share of each other confirm a capacity (cuts in a row are cutFactor apart: not within it). */
  sameCeilingShare: 0.15,
  /** Near a confirmed capacity (from this share of it) the step is nearStepFactor of stepShare ... */
  nearCeiling: 0.9,
  nearStepFactor: 0.25,
  /** ... and reprobeAfterMs without a cut reprobes only once the pace is this far past it. */
  reprobePast: 1.05,
  /** Past ceiling × this, or this long without a cut: the capacity is higher than found; probe multiplicatively again. */
  reprobeAbove: 1.2,
  reprobeAfterMs: 20_000,
  /** Latency counts as slow only once it has stayed slow this long: a pause of our own does not cut. */
  slowForMs: 1000,
  /** A raise needs this share of the pace used over the window. */
  useShare: 0.8,
  /** Slow: recent latency above max(baseline × factor, baseline + slack). */
  latencyFactor: 2,
  latencySlackMs: 50,
  latencyMinSamples: 5,
  recentWeight: 0.2,
  /** The baseline rises toward slower answers with this time constant. */
  baselineRiseMs: 60_000,
  concurrencyHeadroom: 2,
  /** Latency assumed before any answer, and the least the concurrency formula uses. */
  assumedLatencyMs: 1000,
  minLatencyMs: 50,
  /** The token bucket's burst: this many seconds of the pace (at least one token). */
  burstSeconds: 0.05,
} as const;

export function paceBounds(cfg: AdaptiveConfig, rateLimit: RateLimit | null, maxConcurrency: number): PaceBounds {
  const maxRate = Math.min(cfg.max_per_second ?? PACE.defaultMaxPerSecond, ratePerSecond(rateLimit) ?? Infinity);
  return {
    maxRate,
    minRate: Math.min(cfg.min_per_second ?? PACE.defaultMinPerSecond, maxRate),
    maxConcurrency,
    targetLatencyMs: cfg.target_latency_ms ?? null,
  };
}

export function initialPace(b: PaceBounds, nowMs: number): PaceState {
  const rate = clamp(PACE.startPerSecond, b.minRate, b.maxRate);
  return withConcurrency(
    {
      rate,
      concurrency: 1,
      probing: true,
      ceiling: null,
      baselineMs: null,
      baselineAtMs: null,
      recentMs: null,
      recentN: 0,
      windowStartMs: nowMs,
      windowOk: 0,
      cutAtMs: null,
      changedAtMs: nowMs,
      reason: `adaptive pace started at ${fmt(rate)}/s`,
    },
    b,
  );
}

/** The stored state brought inside the bounds in force (they may have been changed since). */
export function paceWithin(s: PaceState | null, b: PaceBounds, nowMs: number): PaceState {
  if (s === null || !Number.isFinite(s.rate)) return initialPace(b, nowMs);
  return withConcurrency({ ...s, rate: clamp(s.rate, b.minRate, b.maxRate) }, b);
}

/** Which congestion signal an answer is, if any. Other failures (4xx, DNS, …) are health's business. */
export function congestionCause(sig: Pick<PaceSignal, "kind" | "statusCode" | "errorClass">): PaceCause | null {
  if (sig.kind === "throttled" || sig.statusCode === 429) return "429";
  if (sig.statusCode === 503) return "503";
  if (sig.errorClass === "timeout") return "timeout";
  return null;
}

/** Latency above which the destination counts as slow. */
export function slowAboveMs(s: Pick<PaceState, "baselineMs">, b: PaceBounds): number | null {
  if (b.targetLatencyMs !== null) return b.targetLatencyMs;
  if (s.baselineMs === null) return null;
  return Math.max(s.baselineMs * PACE.latencyFactor, s.baselineMs + PACE.latencySlackMs);
}

/** Folds a write-back's answers (in completion order) into the pace. */
export function adaptPace(
  prev: PaceState | null,
  b: PaceBounds,
  signals: readonly PaceSignal[],
  nowMs: number,
): { state: PaceState; change: PaceChange | null } {
  let s = paceWithin(prev, b, nowMs);
  const before = s.rate;
  let change: PaceChange | null = null;
  let batchMinMs: number | null = null;
  let cutBy: PaceCause | null = null;
  for (const sig of signals) {
    const afterCut = s.cutAtMs === null || sig.startedAtMs >= s.cutAtMs;
    const mayCut = afterCut && (s.cutAtMs === null || nowMs - s.cutAtMs >= PACE.cutEveryMs);
    const cause = congestionCause(sig);
    if (cause !== null) {
      if (mayCut) {
        s = cut(s, b, cause, nowMs, null);
        cutBy = cause;
      }
      continue;
    }
    if (sig.kind !== "success") continue;
    s = { ...s, windowOk: s.windowOk + 1 };
    batchMinMs = Math.min(batchMinMs ?? Infinity, sig.latencyMs);
    if (!afterCut) continue;
    const recentMs = s.recentMs === null ? sig.latencyMs : s.recentMs + PACE.recentWeight * (sig.latencyMs - s.recentMs);
    s = { ...s, recentMs, recentN: s.recentN + 1 };
    const slowAbove = slowAboveMs(s, b);
    const slow = slowAbove !== null && s.recentN >= PACE.latencyMinSamples && recentMs > slowAbove;
    s = { ...s, slowSinceMs: slow ? (s.slowSinceMs ?? nowMs) : null };
    if (mayCut && slow && nowMs - s.slowSinceMs! >= PACE.slowForMs) {
      s = cut(s, b, "latency", nowMs, slowAbove);
      cutBy = "latency";
    }
  }
  if (batchMinMs !== null) s = withBaseline(s, batchMinMs, nowMs);
  if (cutBy !== null) {
    if (s.rate < before) change = { direction: "down", cause: cutBy, from: before, to: s.rate };
  } else if (nowMs - s.windowStartMs >= PACE.raiseIntervalMs) {
    const used = s.windowOk / ((s.rate * (nowMs - s.windowStartMs)) / 1000);
    const slowAbove = slowAboveMs(s, b);
    const fast = slowAbove === null || s.recentMs === null || s.recentMs <= slowAbove;
    if (used >= PACE.useShare && fast && s.rate < b.maxRate) {
      s = raise(s, b, nowMs);
      change = { direction: "up", cause: "fast", from: before, to: s.rate };
    }
    s = { ...s, windowStartMs: nowMs, windowOk: 0 };
  }
  return { state: withConcurrency(s, b), change };
}

function cut(s: PaceState, b: PaceBounds, cause: PaceCause, nowMs: number, slowAbove: number | null): PaceState {
  const rate = Math.max(b.minRate, s.rate * PACE.cutFactor);
  const why =
    cause === "429"
      ? "429 Too Many Requests"
      : cause === "503"
        ? "503 Service Unavailable"
        : cause === "timeout"
          ? "a request timed out"
          : b.targetLatencyMs !== null
            ? `latency ${fmt(s.recentMs ?? 0)} ms above target_latency_ms ${fmt(slowAbove ?? 0)}`
            : `latency ${fmt(s.recentMs ?? 0)} ms, well above its baseline of ${fmt(s.baselineMs ?? 0)} ms`;
  const at = rate < s.rate ? `pace cut from ${fmt(s.rate)} to ${fmt(rate)}/s` : `pace held at its minimum of ${fmt(rate)}/s`;
  return {
    ...s,
    rate,
    probing: false,
    ceiling: s.rate,
    confirmed: s.ceiling !== null && Math.abs(s.rate - s.ceiling) <= PACE.sameCeilingShare * s.ceiling,
    recentMs: null,
    recentN: 0,
    slowSinceMs: null,
    windowStartMs: nowMs,
    windowOk: 0,
    cutAtMs: nowMs,
    changedAtMs: nowMs,
    reason: `${why}: ${at}`,
  };
}

function raise(s: PaceState, b: PaceBounds, nowMs: number): PaceState {
  // The receiver's capacity, when two cuts confirmed it.
  const capacity = s.confirmed === true ? s.ceiling : null;
  const probing =
    s.probing ||
    (s.ceiling !== null && s.rate > s.ceiling * PACE.reprobeAbove) ||
    (s.cutAtMs !== null && nowMs - s.cutAtMs >= PACE.reprobeAfterMs && (capacity === null || s.rate >= capacity * PACE.reprobePast));
  const near = capacity !== null && s.rate >= PACE.nearCeiling * capacity;
  const step = probing
    ? s.rate * (PACE.probeGrowth - 1)
    : Math.max(PACE.stepShare * (near ? PACE.nearStepFactor : 1) * (s.ceiling ?? s.rate), 0.01);
  const rate = Math.min(b.maxRate, s.rate + step);
  return {
    ...s,
    rate,
    probing,
    changedAtMs: nowMs,
    reason: `fast, successful answers: pace raised from ${fmt(s.rate)} to ${fmt(rate)}/s${rate >= b.maxRate ? " (its maximum)" : ""}`,
  };
}

/** The baseline drops to a faster answer at once and rises toward slower ones slowly. */
function withBaseline(s: PaceState, fastestMs: number, nowMs: number): PaceState {
  if (s.baselineMs === null || s.baselineAtMs === null || fastestMs <= s.baselineMs) {
    return { ...s, baselineMs: fastestMs, baselineAtMs: nowMs };
  }
  const k = 1 - Math.exp(-Math.max(0, nowMs - s.baselineAtMs) / PACE.baselineRiseMs);
  return { ...s, baselineMs: s.baselineMs + k * (fastestMs - s.baselineMs), baselineAtMs: nowMs };
}

function withConcurrency(s: PaceState, b: PaceBounds): PaceState {
  const latencyMs = Math.max(s.baselineMs ?? PACE.assumedLatencyMs, PACE.minLatencyMs);
  const want = Math.ceil(((s.rate * latencyMs) / 1000) * PACE.concurrencyHeadroom) + 1;
  return { ...s, concurrency: clamp(want, 1, b.maxConcurrency) };
}

/**
 * The token buckets the claim spends from under adaptive pace: the per-second bucket at the pace,
 * with a small burst (BURST_SECONDS of it: the receiver sees an even stream, not bursts), beside any
 * per-minute window of a fixed rate_limit, which still holds.
 */
export function pacedRateLimit(rateLimit: RateLimit | null, s: Pick<PaceState, "rate">): RateLimit {
  const burst = Math.max(1, Math.ceil(s.rate * PACE.burstSeconds));
  return {
    ...(rateLimit?.max_per_minute !== undefined ? { max_per_minute: rateLimit.max_per_minute } : {}),
    max_per_second: s.rate,
    burst_capacity: Math.min(burst, rateLimit?.burst_capacity ?? Infinity),
  };
}

function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}

/** Rates and latencies as people read them: at most two decimals. */
export function fmt(x: number): string {
  return String(Math.round(x * 100) / 100);
}

export interface PacedDestination {
  adaptive: AdaptiveConfig | null;
  pace_state: PaceState | null;
  rate_limit: RateLimit | null;
  max_concurrency: number;
  /** Recovering after a probe: the concurrency it may use now. */
  ramp_limit: number | null;
}

/** Whether adaptive pace is on for this config. */
export function adaptiveOn(a: AdaptiveConfig | null | undefined): a is AdaptiveConfig {
  return a?.enabled === true;
}

/**
 * The limits in force now, which the claim enforces and the API shows: adaptive pace's rate and
 * concurrency when it is on (inside the fixed ones), else the fixed ones; a recovery ramp caps
 * concurrency either way.
 */
export function effectiveLimits(
  d: PacedDestination,
  nowMs: number,
): { rateLimit: RateLimit | null; maxConcurrency: number; pace: PaceState | null } {
  const ramp = d.ramp_limit ?? Infinity;
  if (!adaptiveOn(d.adaptive)) return { rateLimit: d.rate_limit, maxConcurrency: Math.min(d.max_concurrency, ramp), pace: null };
  const pace = paceWithin(d.pace_state, paceBounds(d.adaptive, d.rate_limit, d.max_concurrency), nowMs);
  return { rateLimit: pacedRateLimit(d.rate_limit, pace), maxConcurrency: Math.min(pace.concurrency, ramp), pace };
}

/** Sends per second a rate limit allows over time (its tightest window); null = unlimited. */
export function ratePerSecond(r: RateLimit | null): number | null {
  if (!r) return null;
  const perSecond = Math.min(r.max_per_second ?? Infinity, r.max_per_minute !== undefined ? r.max_per_minute / 60 : Infinity);
  return Number.isFinite(perSecond) ? perSecond : null;
}
