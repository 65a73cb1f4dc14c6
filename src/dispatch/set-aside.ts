import type { Logger } from "pino";
import type { Db, Queryable } from "../db/db.js";
import { withRetry } from "../db/db.js";
import { setDestinationsAside, type SetAsideEntry, type SetAsideRow } from "../db/queries/set-aside.js";
import { alertInput, recordAlerts } from "../alerts/alerts.js";
import { healthStateOf, healthView } from "../policy/health.js";
import { metrics } from "../metrics.js";

// One destination's fault stays its own: the claim, the sender and the write-back each hand a
// destination they cannot plan, sign, send or record for to setAside, which pauses it (with an
// alert, like any pause) and lets the round go on for every other destination.

/** A destination to set aside, and what was thrown (for the log; never shown to the customer). */
export interface Fault extends SetAsideEntry {
  error?: unknown;
}

/**
 * Pauses each destination and records its destination.paused alert, in the caller's transaction;
 * `leaseTokens`: leases taken of them for requests that will not be made, handed back.
 */
export async function setAside(q: Queryable, faults: Fault[], leaseTokens: string[] = []): Promise<SetAsideRow[]> {
  const rows = await setDestinationsAside(q, faults, leaseTokens);
  const codes = new Map(faults.map((f) => [f.id, f.code]));
  await recordAlerts(
    q,
    rows.map((r) =>
      alertInput(r, "destination.paused", r.pause_reason, healthView(healthStateOf(r)), { code: codes.get(r.id), probed: false }),
    ),
  );
  return rows;
}

/** After the commit: one error line per destination set aside, with what was thrown, and the metric. */
export function logSetAside(log: Logger, faults: Fault[], rows: SetAsideRow[]): void {
  const paused = new Map(rows.map((r) => [r.id, r]));
  for (const f of faults) {
    const row = paused.get(f.id);
    if (!row) continue; // deleted meanwhile
    metrics.paused.inc({ reason: f.code });
    log.error(
      { tenant_id: row.tenant_id, destination_id: f.id, code: f.code, reason: row.pause_reason, ...(f.error ? { err: f.error } : {}) },
      "destination set aside: paused until a person resumes it",
    );
  }
}

/**
 * Set-asides outside a claim (a send or probe that threw), each in a transaction of its own.
 * One at a time per destination and lease: every delivery of a claim that cannot be signed throws
 * the same way, and one set-aside hands back all of that claim's leases of it.
 */
export class SetAsides {
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly onAlerts?: () => void,
  ) {}

  /** `leaseTokens`: leases of requests never made, handed back uncounted. */
  add(fault: Fault, leaseTokens: string[]): void {
    const key = `${fault.id}\u0000${leaseTokens.join(",")}`;
    if (this.running.has(key)) return;
    const p = withRetry(this.db, (q) => setAside(q, [fault], leaseTokens))
      .then((rows) => {
        logSetAside(this.log, [fault], rows);
        if (rows.length > 0) this.onAlerts?.();
      })
      .catch((err: unknown) =>
        this.log.error(
          { err, cause: fault.error, destination_id: fault.id },
          "could not set a destination aside; its leases expire by themselves and the next claim looks again",
        ),
      )
      .finally(() => this.running.delete(key));
    this.running.set(key, p);
  }

  get pending(): number {
    return this.running.size;
  }
}
