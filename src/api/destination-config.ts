import { IANAZone } from "luxon";
import type { FieldError } from "../errors.js";
import { literalHostRefusal, type NetworkPolicy } from "../delivery/network-guard.js";
import { DEFAULT_RETRY_SCHEDULE_SECONDS } from "../policy/retry-schedule.js";
import { DEFAULT_THROTTLE_SCHEDULE_SECONDS } from "../policy/throttle.js";
import { checkCustomHeaders, restoreMasked } from "../policy/custom-headers.js";
import type { DestinationConfig, DestinationCreate, DestinationPatch } from "../schemas/destinations.js";

// Destination config: defaults and the checks JSON Schema cannot express. Refused values never
// reach the database (a rejected request writes nothing).

export const DESTINATION_DEFAULTS: Omit<DestinationConfig, "url"> = {
  name: "",
  event_types: [],
  timeout_seconds: 15,
  max_concurrency: 5,
  ordered: false,
  rate_limit: null,
  adaptive: null,
  delivery_schedule: null,
  retry_schedule_seconds: [...DEFAULT_RETRY_SCHEDULE_SECONDS],
  throttle_schedule_seconds: [...DEFAULT_THROTTLE_SCHEDULE_SECONDS],
  probe_interval_seconds: 300,
  replay_on_resume: true,
  paused_retention_hours: 72,
  backlog_alert_minutes: 30,
  backlog_alert_age_minutes: 60,
  headers: {},
  secret_headers: [],
};

export function withDefaults(input: DestinationCreate): DestinationConfig {
  const { secret: _secret, ...rest } = input;
  return { ...DESTINATION_DEFAULTS, ...rest };
}

/**
 * PATCH replaces each field it sends (`headers` as a whole map). A secret header sent back as
 * the mask API answers show keeps its stored value, so GET → edit → PATCH loses no secret.
 */
export function applyPatch(current: DestinationConfig, patch: DestinationPatch): DestinationConfig {
  const { secret: _secret, ...rest } = patch;
  const next = { ...current, ...rest };
  if (patch.headers !== undefined) next.headers = restoreMasked(patch.headers, current.headers, current.secret_headers);
  return next;
}

/**
 * Checks beyond the JSON schema; returns every problem found. With `network`, a URL whose host
 * is refused by that policy without any DNS lookup (an IP literal, `localhost`) is one of them:
 * it could never be delivered to, so it is refused now rather than retried for a day.
 */
export function checkDestinationConfig(c: Partial<DestinationConfig>, network?: NetworkPolicy): FieldError[] {
  const problems: FieldError[] = [];
  if (c.url !== undefined) {
    let u: URL | null = null;
    try {
      u = new URL(c.url);
    } catch {
      problems.push({ field: "url", message: "is not a valid absolute URL; use e.g. https://example.com/webhooks" });
    }
    if (u && u.protocol !== "http:" && u.protocol !== "https:") {
      problems.push({ field: "url", message: `scheme '${u.protocol.replace(":", "")}' is not allowed; use http or https` });
    }
    if (u && (u.username || u.password)) {
      problems.push({ field: "url", message: "must not carry credentials (user:password@); they would be stored and logged with the URL" });
    }
    // The WHATWG parser has already turned 127.1 / 0x7f000001 / 2130706433 into 127.0.0.1.
    const refusal = u && network ? literalHostRefusal(u.hostname, network) : null;
    if (refusal !== null) problems.push({ field: "url", message: refusal });
  }
  if (c.rate_limit) {
    const r = c.rate_limit;
    if (r.max_per_second === undefined && r.max_per_minute === undefined) {
      problems.push({ field: "rate_limit", message: "set max_per_second, max_per_minute or both (or rate_limit: null for unlimited)" });
    }
  }
  if (c.adaptive) {
    const a = c.adaptive;
    if (a.min_per_second !== undefined && a.max_per_second !== undefined && a.min_per_second > a.max_per_second) {
      problems.push({
        field: "adaptive.min_per_second",
        message: `is above max_per_second (${a.min_per_second} > ${a.max_per_second}); lower it or raise max_per_second`,
      });
    }
  }
  if (c.delivery_schedule) {
    const s = c.delivery_schedule;
    if (!IANAZone.isValidZone(s.timezone)) {
      problems.push({
        field: "delivery_schedule.timezone",
        message: `'${s.timezone}' is not an IANA time zone name; use e.g. 'Europe/Berlin' or 'America/New_York'`,
      });
    }
    if (normaliseTime(s.quiet_start) === normaliseTime(s.quiet_end)) {
      problems.push({
        field: "delivery_schedule.quiet_end",
        message: "equals quiet_start: the window would be empty (or all day); pick different times",
      });
    }
  }
  problems.push(...checkCustomHeaders(c.headers, c.secret_headers));
  return problems;
}

function normaliseTime(t: string): string {
  return t.length === 5 ? `${t}:00` : t;
}
