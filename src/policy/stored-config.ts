// What the workers read of a destination is checked before it is planned with: a row whose
// config or live state lies outside what the API admits (written before a bound existed, by hand
// in SQL, or by a bug) is set aside — paused with reason `invalid_config` — never planned. The
// config is held to the very schema requests are validated with (schemas/destinations.ts, whose
// numbers come from bounds.ts); the state, which no request writes, to the ranges its own code
// keeps it in.

import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { Type } from "@sinclair/typebox";
import { IANAZone } from "luxon";
import { DestinationConfig } from "../schemas/destinations.js";
import { BOUNDS, EARLIEST_MS, LATEST_MS, describeBound, formatNumber } from "./bounds.js";
import { HEALTH_STATUSES } from "./statuses.js";
import { checkCustomHeaders } from "./custom-headers.js";

/** The config fields a worker reads: every one the claim, the sender or the write-back plans with. */
const WORKER_FIELDS = [
  "url",
  "headers",
  "timeout_seconds",
  "max_concurrency",
  "ordered",
  "rate_limit",
  "adaptive",
  "delivery_schedule",
  "retry_schedule_seconds",
  "throttle_schedule_seconds",
  "probe_interval_seconds",
] as const;

// Absent fields are not checked: the claim and the write-back read different subsets of the row.
const validateConfig: ValidateFunction = new Ajv({ allErrors: false, strict: false, verbose: true }).compile(
  Type.Partial(Type.Pick(DestinationConfig, WORKER_FIELDS)),
);

/** A destination row as a worker reads it: any subset of the config and state below. */
export interface StoredDestination {
  url?: unknown;
  headers?: unknown;
  timeout_seconds?: unknown;
  max_concurrency?: unknown;
  ordered?: unknown;
  rate_limit?: unknown;
  adaptive?: unknown;
  delivery_schedule?: unknown;
  retry_schedule_seconds?: unknown;
  throttle_schedule_seconds?: unknown;
  probe_interval_seconds?: unknown;
  secrets?: unknown;
  bucket_state?: unknown;
  pace_state?: unknown;
  ramp_limit?: unknown;
  throttled_until?: unknown;
  next_probe_at?: unknown;
  paused_at?: unknown;
  health_window?: unknown;
  health_status?: unknown;
  consecutive_failures?: unknown;
  consecutive_auth_failures?: unknown;
  consecutive_throttles?: unknown;
}

/**
 * What is wrong with a stored destination, in one sentence that names the field, the value and
 * the range; null when every field present is within what the API admits.
 */
export function storedDestinationProblem(d: StoredDestination): string | null {
  if (!validateConfig(d)) return configMessage(validateConfig.errors?.[0]);
  // Names and values the schema cannot express (reserved names, CR/LF): a stored CR/LF would be header injection.
  const [header] = d.headers ? checkCustomHeaders(d.headers as Record<string, unknown>, undefined) : [];
  if (header) return `${header.field} ${header.message}`;
  const schedule = d.delivery_schedule as { timezone: string } | null | undefined;
  if (schedule && !IANAZone.isValidZone(schedule.timezone)) {
    return `delivery_schedule.timezone '${schedule.timezone}' is not an IANA time zone this runtime knows`;
  }
  return stateProblem(d);
}

function configMessage(e: ErrorObject | undefined): string {
  if (!e) return "the stored config does not match the API's schema";
  const field = e.instancePath.replace(/^\//, "").replace(/\//g, ".") || "config";
  const value = shown(e.data);
  const ps = e.parentSchema as { minimum?: number; maximum?: number; type?: string } | undefined;
  if (ps && typeof ps.minimum === "number" && typeof ps.maximum === "number") {
    const whole = ps.type === "integer" ? "a whole number " : "";
    return `${field} is ${value}; it must be ${whole}between ${formatNumber(ps.minimum)} and ${formatNumber(ps.maximum)}`;
  }
  return `${field} is ${value}; it ${e.message ?? "is invalid"}`;
}

const MAX_TOKENS = Math.max(BOUNDS.burst_capacity.max, BOUNDS.rate_per_minute.max);

function stateProblem(d: StoredDestination): string | null {
  if ("secrets" in d) {
    const s = d.secrets;
    const ok =
      Array.isArray(s) &&
      s.length > 0 &&
      s.every((x: unknown) => isObject(x) && typeof x.secret === "string" && (x.expires_at === null || typeof x.expires_at === "string"));
    if (!ok)
      return "secrets is not a list of {secret, expires_at}: rotate the secret (POST /v1/destinations/{id}/rotate-secret) to write a new one";
  }
  if ("bucket_state" in d && d.bucket_state !== null) {
    if (!isObject(d.bucket_state)) return "bucket_state is not an object";
    for (const [window, s] of Object.entries(d.bucket_state)) {
      if (!isObject(s) || !finiteIn(s.tokens, 0, MAX_TOKENS) || !finiteIn(s.atMs, EARLIEST_MS, LATEST_MS)) {
        return `bucket_state.${window} is ${shown(s)}; tokens must be finite, 0 to ${MAX_TOKENS}, and atMs an instant`;
      }
    }
  }
  if ("pace_state" in d && d.pace_state !== null) {
    const p = d.pace_state;
    const maxRate = BOUNDS.adaptive_rate_per_second.max;
    if (!isObject(p) || !finiteIn(p.rate, 0, maxRate) || !(p.rate > 0) || !finiteIn(p.concurrency, 1, BOUNDS.max_concurrency.max)) {
      return `pace_state is ${shown(p)}; its rate must be above 0 and at most ${maxRate}, its concurrency 1 to ${BOUNDS.max_concurrency.max}`;
    }
  }
  if ("ramp_limit" in d && d.ramp_limit !== null && !isCount(d.ramp_limit, 1, BOUNDS.max_concurrency.max)) {
    return `ramp_limit is ${shown(d.ramp_limit)}; it must be null or ${describeBound(BOUNDS.max_concurrency)}`;
  }
  for (const f of ["throttled_until", "next_probe_at", "paused_at"] as const) {
    const v = d[f];
    if (f in d && v !== null && !(v instanceof Date && finiteIn(v.getTime(), EARLIEST_MS, LATEST_MS))) {
      return `${f} is ${shown(v)}; it must be null or an instant between 1970 and 9999`;
    }
  }
  if ("health_window" in d && !(typeof d.health_window === "string" && /^[01]{0,1000}$/.test(d.health_window))) {
    return "health_window is not a string of up to 1,000 outcomes (0 and 1)";
  }
  if ("health_status" in d && !(HEALTH_STATUSES as readonly unknown[]).includes(d.health_status)) {
    return `health_status is ${shown(d.health_status)}; it must be one of ${HEALTH_STATUSES.join(", ")}`;
  }
  for (const f of ["consecutive_failures", "consecutive_auth_failures", "consecutive_throttles"] as const) {
    if (f in d && !isCount(d[f], 0, 2 ** 31 - 1)) return `${f} is ${shown(d[f])}; it must be a count from 0`;
  }
  return null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function finiteIn(v: unknown, min: number, max: number): v is number {
  return typeof v === "number" && Number.isFinite(v) && v >= min && v <= max;
}

function isCount(v: unknown, min: number, max: number): v is number {
  return finiteIn(v, min, max) && Number.isInteger(v);
}

/** A stored value as a message shows it: JSON, cut short (Dates as their instant, NaN as NaN). */
function shown(v: unknown): string {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? "an invalid date" : v.toISOString();
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  const json = JSON.stringify(v) as string | undefined;
  return json === undefined ? typeof v : json.length > 80 ? `${json.slice(0, 80)}…` : json;
}

/**
 * `read()` over a stored destination, or `fallback` when the row makes policy throw. For reads
 * outside the claim (the API's views, publish, the backlog watch): the claim sets such a row
 * aside, and reading it must fail neither the request nor a round shared with other destinations.
 */
export function unlessFaulty<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}
