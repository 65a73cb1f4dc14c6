import type { Outcome } from "./outcome.js";
import type { HealthStatus, PauseCauseStored } from "./statuses.js";

// A destination's health: a sliding-window success rate plus failure runs, kept incrementally in a
// few columns (no aggregation over the attempts table), and the auto-pause and alert decisions that
// follow from them. Pure: the caller loads the state, folds a batch of outcomes in, writes it back.
//
// Choices (the product issue left them open):
//
// * Minimum sample. Below `minSamples` attempts in the window the score is still reported, but
//   the status stays "healthy" and the score cannot pause: one early failure of a new destination
//   (score 0 from a window of "0") is no verdict. The hard rules do not wait for the sample:
//   410, DNS failure, a blocked address, repeated 401/403/404 and K consecutive failures pause
//   at any age. With the defaults (minSamples 10 = maxConsecutiveFailures 10) a destination that
//   has never answered is paused on its 10th failure either way. minSamples is capped at
//   windowSize (the window can never hold more), so a larger setting cannot switch the score off
//   by accident.
//
// * TLS is "transient". Certificate failures (expired, wrong host, incomplete chain) are almost
//   always mended by the endpoint's operator renewing or re-installing the certificate, without
//   telling us; probing notices the fix and resumes delivery on its own. A permanent pause would
//   leave every such destination stopped until someone finds and presses "resume". TLS therefore
//   never pauses at once either; it pauses like 5xx (K in a row or by score).
//
// * Pause cause of a K-in-a-row or score pause is that of the answer that tipped it: 10×500 is
//   transient, 10×400 is permanent (the request itself is refused; a probe cannot change that).
//   Permanent: 410, DNS, 401/403/404, other 4xx, 301/308 (moved permanently: the URL must change),
//   "blocked" (the address is refused by our network policy). Transient: 5xx, timeout,
//   connection, TLS, invalid response, other 3xx (302/303/307 are usually a login page or a
//   maintenance redirect that goes away).
//
// * "blocked" pauses at once, permanent, and is never probed: the refusal is our own network
//   policy (SLUICE_ALLOW_PRIVATE_NETWORKS / SLUICE_ALLOWED_CIDRS), which does not change by
//   itself, so retrying only burns the delivery's retries. The reason names the refused address
//   and the setting; once it is changed (or the name points elsewhere) a person resumes.
//
// * Several pauses in one batch: the first one wins, except that a later pause with a permanent
//   cause replaces a transient one (e.g. [10×500, 410]: "the endpoint answered 410 Gone",
//   permanent). Probing an endpoint that said 410 is wrong, while a permanent reason costs
//   nothing if the endpoint was also failing transiently. Between two pauses of the same cause
//   the first stays, so the reason names what stopped delivery, not what arrived after.
//
// * Only a failure can pause: a success, even one that leaves the score below 50, never does.
//   A 429 is not an attempt for health at all: it leaves window and counters as they were.
//
// * Alerts: "degraded" when the status leaves "healthy" (the first step down), "paused" when this
//   batch pauses the destination, else null. degraded → critical → unhealthy without a pause
//   alerts nothing more; a return to "healthy" re-arms the degraded alert. A batch is judged by
//   its end state: a dip that recovers inside one batch does not alert.
//
// * On resume (manual or after a successful probe) the caller should store emptyHealth(): the old
//   window and run would otherwise re-pause on the first failure after the resume.

export type { HealthStatus };

export type HealthClass =
  | "success"
  | "throttle"
  | "gone"
  | "client_error"
  | "auth_or_missing"
  | "redirect"
  | "server_error"
  | "timeout"
  | "connection"
  | "tls"
  | "dns"
  | "blocked"
  | "invalid_response";

/** The automatic pause causes (a person's pause is "manual"). */
export type PauseCause = Exclude<PauseCauseStored, "manual">;

export interface PauseDecision {
  /** For the customer, prefixed "auto: ". */
  reason: string;
  /** "transient" pauses are probed and resume on their own; "permanent" ones wait for a person. */
  cause: PauseCause;
  /** Short, fixed label for metrics: gone | dns | blocked | auth | consecutive_failures | score. */
  code: "gone" | "dns" | "blocked" | "auth" | "consecutive_failures" | "score";
}

export type HealthTransition = "degraded" | "paused" | null;

export interface HealthConfig {
  /** N: attempts (429s excluded) the score is taken over. */
  windowSize: number;
  /** Attempts the window must hold before the score can move the status below healthy or pause. */
  minSamples: number;
  /** K: failures in a row that pause, whatever the score. */
  maxConsecutiveFailures: number;
  /** 401/403/404 answers in a row that pause at once. */
  authFailuresToPause: number;
}

export const DEFAULT_HEALTH_CONFIG: Readonly<HealthConfig> = Object.freeze({
  windowSize: 50,
  minSamples: 10,
  maxConsecutiveFailures: 10,
  authFailuresToPause: 3,
});

export interface HealthState {
  /** The last ≤ windowSize attempts, oldest first: "1" success, "0" failure. */
  window: string;
  consecutiveFailures: number;
  /** 401/403/404 answers in a row (any other answer but a 429 ends the run). */
  consecutiveAuthFailures: number;
  /** Status after the last batch; the reference the next batch's transition is judged against. */
  status: HealthStatus;
}

/** The health columns of a destination row, as stored. */
export interface StoredHealth {
  health_window: string;
  health_status: HealthStatus;
  consecutive_failures: number;
  consecutive_auth_failures: number;
}

/** A destination row's health state, from its columns. */
export function healthStateOf(row: StoredHealth): HealthState {
  return {
    window: row.health_window,
    consecutiveFailures: row.consecutive_failures,
    consecutiveAuthFailures: row.consecutive_auth_failures,
    status: row.health_status,
  };
}

/** An outcome, with the attempt's error message when known (it names DNS codes like ENOTFOUND). */
export type HealthInput = Outcome & { errorMessage?: string | null };

export interface HealthResult {
  state: HealthState;
  /** 0–100, of the new window. */
  score: number;
  /** Set when this batch pauses the destination (never when `paused` was passed in). */
  pause: PauseDecision | null;
  transition: HealthTransition;
}

export function emptyHealth(): HealthState {
  return { window: "", consecutiveFailures: 0, consecutiveAuthFailures: 0, status: "healthy" };
}

const AUTH_OR_MISSING = new Set([401, 403, 404]);

/** What one attempt's outcome means for health. */
export function healthClass(outcome: Outcome): HealthClass {
  switch (outcome.kind) {
    case "success":
      return "success";
    case "throttled":
      return "throttle";
    case "gone":
      return "gone";
    case "failure":
      break;
  }
  switch (outcome.errorClass) {
    case "http_429":
      return "throttle";
    case "http_410":
      return "gone";
    case "http_5xx":
      return "server_error";
    case "http_3xx":
      return "redirect";
    case "http_4xx":
      return httpClass(outcome.statusCode ?? 400);
    case "timeout":
    case "connection":
    case "dns":
    case "tls":
    case "blocked":
    case "invalid_response":
      return outcome.errorClass;
    case null:
      // Not produced by classify(); read the status if there is one, as classify() would.
      return outcome.statusCode === null ? "connection" : httpClass(outcome.statusCode);
  }
}

function httpClass(status: number): HealthClass {
  if (status >= 200 && status < 300) return "success";
  if (status === 429) return "throttle";
  if (status === 410) return "gone";
  if (AUTH_OR_MISSING.has(status)) return "auth_or_missing";
  if (status >= 500 && status < 600) return "server_error";
  if (status >= 400 && status < 500) return "client_error";
  if (status >= 300 && status < 400) return "redirect";
  return "invalid_response";
}

/** Whether a pause tipped by an answer of this class can mend itself (and is worth probing). */
export function pauseCauseOf(cls: HealthClass, statusCode: number | null): PauseCause {
  switch (cls) {
    case "gone":
    case "dns":
    case "auth_or_missing":
    case "client_error":
    case "blocked":
      return "permanent";
    case "redirect":
      return statusCode === 301 || statusCode === 308 ? "permanent" : "transient";
    default:
      return "transient";
  }
}

/** round(100 × successes / attempts); an empty window is 100. */
export function scoreOf(window: string): number {
  if (window.length === 0) return 100;
  return Math.round((100 * countSuccesses(window)) / window.length);
}

/** Status from score; below the minimum sample (capped at windowSize) it stays "healthy". */
export function statusOf(score: number, samples: number, cfg: HealthConfig = DEFAULT_HEALTH_CONFIG): HealthStatus {
  if (samples < Math.min(cfg.minSamples, cfg.windowSize)) return "healthy";
  if (score >= 95) return "healthy";
  if (score >= 75) return "degraded";
  if (score >= 50) return "critical";
  return "unhealthy";
}

/** The alert for a batch: "paused" if it paused, "degraded" on leaving healthy, else null. */
export function healthTransition(prev: HealthStatus, next: HealthStatus, pausedNow: boolean): HealthTransition {
  if (pausedNow) return "paused";
  if (prev === "healthy" && next !== "healthy") return "degraded";
  return null;
}

/**
 * The `health` field of a destination in the API: the status the last batch stored (worked out
 * with the workers' settings), and the score of the window — as stored, or trimmed to `cfg`'s size.
 */
export function healthView(
  state: HealthState,
  cfg?: HealthConfig,
): {
  status: HealthStatus;
  score: number;
  consecutive_failures: number;
} {
  const window = cfg ? trim(state.window, cfg.windowSize) : state.window;
  return { status: state.status, score: scoreOf(window), consecutive_failures: state.consecutiveFailures };
}

/**
 * Folds a batch of outcomes (in completion order) into a destination's health. `paused`: the
 * destination is paused already (answers of requests still in flight when it paused, or probes):
 * the state is still updated, but no pause is decided and no alert is reported.
 */
export function applyOutcomes(
  state: HealthState,
  outcomes: readonly HealthInput[],
  cfg: HealthConfig = DEFAULT_HEALTH_CONFIG,
  opts: { paused?: boolean } = {},
): HealthResult {
  checkConfig(cfg);
  const n = cfg.windowSize;
  let window = trim(state.window, n);
  let successes = countSuccesses(window);
  let failures = state.consecutiveFailures;
  let authFailures = state.consecutiveAuthFailures;
  let pause: PauseDecision | null = null;

  for (const outcome of outcomes) {
    const cls = healthClass(outcome);
    if (cls === "throttle") continue;
    const ok = cls === "success";
    // Slide the window: append the newest, drop the oldest beyond N, keep the count in step.
    window += ok ? "1" : "0";
    if (ok) successes++;
    if (window.length > n) {
      if (window.charCodeAt(0) === ONE) successes--;
      window = window.slice(window.length - n);
    }
    if (ok) {
      failures = 0;
      authFailures = 0;
      continue;
    }
    failures++;
    authFailures = cls === "auth_or_missing" ? authFailures + 1 : 0;
    if (opts.paused) continue;
    const candidate = pauseFor(outcome, cls, window, successes, failures, authFailures, cfg);
    if (candidate !== null && (pause === null || (pause.cause === "transient" && candidate.cause === "permanent"))) {
      pause = candidate;
    }
  }

  const score = window.length === 0 ? 100 : Math.round((100 * successes) / window.length);
  const status = statusOf(score, window.length, cfg);
  const transition = opts.paused ? null : healthTransition(state.status, status, pause !== null);
  return {
    state: { window, consecutiveFailures: failures, consecutiveAuthFailures: authFailures, status },
    score,
    pause,
    transition,
  };
}

const ONE = "1".charCodeAt(0);

function pauseFor(
  outcome: HealthInput,
  cls: HealthClass,
  window: string,
  successes: number,
  failures: number,
  authFailures: number,
  cfg: HealthConfig,
): PauseDecision | null {
  // At once, whatever the sample: answers that say the endpoint is not there.
  if (cls === "gone") return { reason: "auto: the endpoint answered 410 Gone", cause: "permanent", code: "gone" };
  if (cls === "dns") {
    const code = dnsCode(outcome.errorMessage);
    return { reason: `auto: DNS lookup failed for the host${code ? ` (${code})` : ""}`, cause: "permanent", code: "dns" };
  }
  if (cls === "blocked") return { reason: blockedReason(outcome.errorMessage), cause: "permanent", code: "blocked" };
  if (cls === "auth_or_missing" && authFailures >= cfg.authFailuresToPause) {
    const hint = outcome.statusCode === 404 ? "check the URL" : "check the credentials the endpoint expects";
    return {
      reason: `auto: ${authFailures} consecutive HTTP 401/403/404 answers (last: HTTP ${outcome.statusCode}); ${hint}`,
      cause: "permanent",
      code: "auth",
    };
  }
  const cause = pauseCauseOf(cls, outcome.statusCode);
  if (failures >= cfg.maxConsecutiveFailures) {
    return {
      reason: `auto: ${failures} consecutive failures (last: ${describeFailure(outcome, cls)})`,
      cause,
      code: "consecutive_failures",
    };
  }
  const score = Math.round((100 * successes) / window.length);
  if (statusOf(score, window.length, cfg) === "unhealthy") {
    const failed = window.length - successes;
    return {
      reason: `auto: health score ${score} fell below 50 (${failed} of ${window.length} recent attempts failed)`,
      cause,
      code: "score",
    };
  }
  return null;
}

function describeFailure(outcome: HealthInput, cls: HealthClass): string {
  if (outcome.statusCode !== null) return `HTTP ${outcome.statusCode}`;
  switch (cls) {
    case "timeout":
      return "timed out";
    case "connection":
      return "could not connect";
    case "tls":
      return "TLS handshake failed";
    case "dns":
      return "DNS lookup failed";
    case "blocked":
      return "address not allowed";
    case "invalid_response":
      return "invalid HTTP response";
    default:
      return "no answer";
  }
}

// The sender's refusal names the address, its class and the setting that allows it
// ("Refused to connect to localhost (127.0.0.1): a loopback address, … Set … to allow it.").
const BLOCKED_MESSAGE = /Refused to connect to [^]*/;
const MAX_BLOCKED_MESSAGE = 400;

function blockedReason(message: string | null | undefined): string {
  const found = message ? BLOCKED_MESSAGE.exec(message)?.[0] : undefined;
  if (found === undefined) {
    return (
      "auto: the destination's address is refused by this Sluice's network policy; set SLUICE_ALLOW_PRIVATE_NETWORKS=1 " +
      "or add the address to SLUICE_ALLOWED_CIDRS, then resume the destination"
    );
  }
  const text = found.length > MAX_BLOCKED_MESSAGE ? `${found.slice(0, MAX_BLOCKED_MESSAGE)}…` : found.replace(/\.\s*$/, "");
  return `auto: ${text.charAt(0).toLowerCase()}${text.slice(1)}, then resume the destination`;
}

function dnsCode(message: string | null | undefined): string | null {
  if (!message) return null;
  return /\b(ENOTFOUND|EAI_[A-Z]+)\b/.exec(message)?.[1] ?? null;
}

function countSuccesses(window: string): number {
  let k = 0;
  for (let i = 0; i < window.length; i++) if (window.charCodeAt(i) === ONE) k++;
  return k;
}

function trim(window: string, n: number): string {
  return window.length > n ? window.slice(window.length - n) : window;
}

function checkConfig(cfg: HealthConfig): void {
  const positive = (v: number) => Number.isInteger(v) && v >= 1;
  if (!positive(cfg.windowSize)) throw new RangeError(`health windowSize must be a positive integer, got ${cfg.windowSize}`);
  if (!Number.isInteger(cfg.minSamples) || cfg.minSamples < 0)
    throw new RangeError(`health minSamples must be an integer ≥ 0, got ${cfg.minSamples}`);
  if (!positive(cfg.maxConsecutiveFailures))
    throw new RangeError(`health maxConsecutiveFailures must be a positive integer, got ${cfg.maxConsecutiveFailures}`);
  if (!positive(cfg.authFailuresToPause))
    throw new RangeError(`health authFailuresToPause must be a positive integer, got ${cfg.authFailuresToPause}`);
}
