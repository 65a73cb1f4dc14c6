import type { HealthState } from "../../policy/health.js";

// The columns that hold a destination's health (policy/health.ts HealthState), written from a
// HealthState the policy produced — a resume stores emptyHealth() — never from values spelt in SQL.

/**
 * A SET list writing `h` to health_window, health_status, consecutive_failures and
 * consecutive_auth_failures, as parameters $first … $first+3; append `params` to the statement's.
 */
export function setHealth(h: HealthState, first: number): { sql: string; params: unknown[] } {
  return {
    sql: `health_window = $${first}, health_status = $${first + 1}, consecutive_failures = $${first + 2}, consecutive_auth_failures = $${first + 3}`,
    params: [h.window, h.status, h.consecutiveFailures, h.consecutiveAuthFailures],
  };
}
