// Which destinations an event type is routed to.

/** Types Sluice publishes about destinations; they reach only destinations that name them. */
export const SYSTEM_TYPE_PREFIX = "destination.";

/**
 * True when `type` matches a destination's `event_types`: `[]` matches every type but the
 * `destination.*` ones; an entry matches exactly, or as a prefix when it ends with `*`.
 */
export function matchesEventType(patterns: readonly string[], type: string): boolean {
  const system = type.startsWith(SYSTEM_TYPE_PREFIX);
  if (patterns.length === 0) return !system;
  for (const p of patterns) {
    if (system && !p.startsWith(SYSTEM_TYPE_PREFIX)) continue;
    if (p.endsWith("*") ? type.startsWith(p.slice(0, -1)) : p === type) return true;
  }
  return false;
}
