import type { Queryable } from "../db.js";
import { READY_AT_IDLE } from "./ready-at.js";
import { lockedInIdOrder } from "./row-locks.js";
import type { HealthStatus } from "../../policy/statuses.js";
import { NOW } from "./sql-time.js";

// Setting a destination aside: the workers found its stored config or state outside what the API
// admits, or planning, signing, sending or recording for it threw. It is paused (cause
// `permanent`: never probed, it waits for a person), so one destination's fault stays its own
// instead of failing every claim or write-back it shares with others.

/** Why a destination was set aside; the first word of its pause_reason and its metrics label. */
export type SetAsideCode = "invalid_config" | "internal_error";

export interface SetAsideEntry {
  id: string;
  code: SetAsideCode;
  /** What went wrong, for the customer (no stack, no secrets). */
  detail: string;
}

export interface SetAsideRow {
  id: string;
  tenant_id: string;
  name: string;
  url: string;
  pause_reason: string;
  health_window: string;
  health_status: HealthStatus;
  consecutive_failures: number;
  consecutive_auth_failures: number;
}

/** The pause_reason a set-aside destination shows: its code first, then what to do. */
export function setAsideReason(code: SetAsideCode, detail: string): string {
  const mend =
    code === "invalid_config"
      ? "correct it with PATCH /v1/destinations/{id}, then resume"
      : "Sluice's log has the details (look for this destination's id); resume to try again";
  return `${code}: ${detail.slice(0, 400)}; ${mend}`;
}

/**
 * Pauses each destination (in id order: no deadlock with another writer that locks several) and
 * hands back the leases `leaseTokens` took of it (requests never made: no attempt is counted).
 * Deleted destinations are left as they are. Returns the destinations paused, for their alerts.
 */
export async function setDestinationsAside(q: Queryable, entries: SetAsideEntry[], leaseTokens: string[] = []): Promise<SetAsideRow[]> {
  if (entries.length === 0) return [];
  const sorted = [...entries].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const ids = sorted.map((e) => e.id);
  await q.query(lockedInIdOrder("$1"), [ids]);
  if (leaseTokens.length > 0) {
    await q.query("DELETE FROM leases WHERE destination_id = ANY($1::text[]) AND token = ANY($2::uuid[])", [ids, leaseTokens]);
  }
  return q.query<SetAsideRow>(
    `UPDATE destinations d
        SET paused_at = coalesce(d.paused_at, ${NOW}), pause_reason = a.reason, pause_cause = 'permanent', next_probe_at = NULL,
            ramp_limit = NULL, rate_limited = false, idle_recheck = false, ready_at = ${READY_AT_IDLE}, updated_at = now()
       FROM unnest($1::text[], $2::text[]) AS a(id, reason)
      WHERE d.id = a.id AND d.deleted_at IS NULL
      RETURNING d.id, d.tenant_id, d.name, d.url, d.pause_reason, d.health_window, d.health_status,
                d.consecutive_failures, d.consecutive_auth_failures`,
    [ids, sorted.map((e) => setAsideReason(e.code, e.detail))],
  );
}
