// Which destinations an event type is routed to.

import { DELIVERY_ALERT_TYPES } from "./statuses.js";

/** Types Sluice publishes about destinations; they reach only destinations that name them. */
export const SYSTEM_TYPE_PREFIX = "destination.";

/**
 * True for the types Sluice publishes itself: every `destination.*`, and `delivery.dead`. Only
 * that exact `delivery.*` type is reserved: tenants' own `delivery.shipped` and the like stay theirs.
 */
export function isSystemEventType(type: string): boolean {
  return type.startsWith(SYSTEM_TYPE_PREFIX) || (DELIVERY_ALERT_TYPES as readonly string[]).includes(type);
}

/**
 * True when `type` matches a destination's `event_types`: `[]` matches every type but Sluice's
 * own; an entry matches exactly, or as a prefix when it ends with `*`. Sluice's own types match
 * only entries that spell out their family (`destination.…`, `delivery.…`): `*` is not a
 * subscription to them, `delivery.*` and `delivery.dead` are.
 */
export function matchesEventType(patterns: readonly string[], type: string): boolean {
  const system = isSystemEventType(type);
  if (patterns.length === 0) return !system;
  const family = system ? type.slice(0, type.indexOf(".") + 1) : "";
  for (const p of patterns) {
    if (system && !p.startsWith(family)) continue;
    if (p.endsWith("*") ? type.startsWith(p.slice(0, -1)) : p === type) return true;
  }
  return false;
}
