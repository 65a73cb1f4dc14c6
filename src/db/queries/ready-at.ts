// destinations.ready_at: the earliest time a dispatcher may find something to do at a
// destination (NULL: nothing until new work arrives). Every statement that writes it outside the
// claim builds the value here, so the rules live in one place:
//
// * ready_at never falls inside a throttle hold: until throttled_until nothing may be sent, so
//   waking the destination earlier only buys a claim that puts it back to sleep. (The claim
//   applies the same rule in TypeScript: policy/gates.ts nextReadyAt.)
// * A paused or deleted destination is not woken by new work; a paused one keeps the ready_at of
//   its probe schedule (a manual pause and a delete leave it idle).
// * Waking only ever moves ready_at earlier: a destination already due sooner keeps its time.
//
// The builders return SQL text over the row being updated; `t` is the table alias ("d.") or "".
// They go inside CASE and COALESCE, so they read the clock as sql-time.ts says.

import { NOW, nowPlusSeconds } from "./sql-time.js";

/** ready_at of a destination with nothing to wake for: manually paused, deleted. */
export const READY_AT_IDLE = "NULL";

/**
 * Ready at once, for the next claim to work out the real time (it applies every gate, the hold
 * included): after a resume, a successful probe, leases handed back, a lost wake-up.
 */
export const READY_AT_NOW = NOW;

/**
 * `at`, moved out of the throttle hold: greatest(at, throttled_until). `throttledUntil` is the
 * hold's end as an SQL expression — the column, or the new value a statement is writing.
 */
export function readyAtOutsideHold(at: string, throttledUntil = "throttled_until"): string {
  return `greatest(${at}, coalesce(${throttledUntil}, ${NOW}))`;
}

/** True when no throttle hold is in force now (the hold rule leaves now() as it is). */
export function noHoldInForce(t = ""): string {
  return `${readyAtOutsideHold("now()", `${t}throttled_until`)} = now()`;
}

/** The destination may be woken by new work: live and not paused. */
export function wakeable(t = ""): string {
  return `${t}paused_at IS NULL AND ${t}deleted_at IS NULL`;
}

/** `at` would move ready_at earlier (or the destination is idle). */
export function readyAtLaterThan(at: string, t = ""): string {
  return `(${t}ready_at IS NULL OR ${t}ready_at > ${at})`;
}

/** The earlier of the current ready_at and `at`; an idle destination: now (the claim applies the hold). */
export function readyAtNoLaterThan(at: string, t = ""): string {
  return `least(coalesce(${t}ready_at, ${NOW}), ${at})`;
}

/** The next probe of a transiently paused destination, probe_interval_seconds from now. */
export function nextProbeAt(t = ""): string {
  return nowPlusSeconds(`${t}probe_interval_seconds`);
}
