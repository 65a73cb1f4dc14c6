import type { Logger } from "pino";
import { sleep } from "../sleep.js";
import type { Db } from "../db/db.js";
import { isRetryableDbError, isStoreUnavailable, lastStatement, withRetry } from "../db/db.js";
import {
  lockDestinationsForResults,
  finishDeliveries,
  updateDestinationsAfterResults,
  releaseLeases,
  type LockedDestinationState,
  type DestinationUpdate,
} from "../db/queries/results.js";
import type { SetAsideRow } from "../db/queries/set-aside.js";
import { alertInput, deathAlerts, recordAlerts, type AlertInput } from "../alerts/alerts.js";
import { DEFAULT_HEALTH_CONFIG, type HealthConfig } from "../policy/health.js";
import { storedDestinationProblem } from "../policy/stored-config.js";
import { metrics } from "../metrics.js";
import { decideDelivery, decideDestination, type Decision, type FinishedSend } from "./decide.js";
import { faultDetail } from "./claim-plan.js";
import { logAttempt, logDestinationUpdate } from "./dispatch-log.js";
import { logSetAside, setAside, type Fault } from "./set-aside.js";

// Writing results back: finished sends are gathered while a write runs and written in batches,
// one transaction each — the attempt rows, the deliveries' new states, the destinations' counters,
// throttle, health and ready_at, and any alerts.
//
// One destination's fault stays its own. A destination whose stored state is out of bounds, or
// whose decision throws, is set aside inside the batch's transaction while the rest land. A batch
// whose write fails for a reason that is not the store's (a value the store refuses, say) is
// written again one destination at a time, and a destination whose own write still fails is set
// aside — its requests were made, so its leases are released with the attempt counted.

/** Pause before writing results again after a failed write. */
const RESULT_RETRY_MS = 250;
/** Results written in one transaction. */
const BATCH = 1000;

export interface ResultWriterOptions {
  health?: HealthConfig;
  /** Called after a write-back recorded alerts (to publish them without waiting for a poll). */
  onAlerts?: () => void;
}

export class ResultWriter {
  private pending: FinishedSend[] = [];
  private readonly flushes = new Set<Promise<void>>();

  /**
   * `done(ids)`: these deliveries' results are written (or given up on): their send slots are
   * free. `pause(ms)`: a wait after a failed write that new activity may cut short.
   */
  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly opts: ResultWriterOptions,
    private readonly done: (deliveryIds: string[]) => void,
    private readonly pause: (ms: number) => Promise<void>,
  ) {}

  get size(): number {
    return this.pending.length;
  }

  add(f: FinishedSend): void {
    this.pending.push(f);
    this.scheduleFlush();
  }

  /** Writes every pending result, giving up at `deadlineMs` if the store will not take them; returns those left. */
  async flush(deadlineMs = Infinity): Promise<FinishedSend[]> {
    while (this.flushes.size > 0 && Date.now() < deadlineMs) await Promise.race([Promise.all(this.flushes), sleep(100)]);
    while (this.pending.length > 0 && Date.now() < deadlineMs) await this.flushOnce();
    const left = this.pending;
    this.pending = [];
    return left;
  }

  /**
   * One write at a time gathers results while it runs; a second starts only for a big backlog,
   * so a slow commit does not hold everything up — and small batches are not split further.
   */
  private scheduleFlush(): void {
    if (this.flushes.size >= 2 || (this.flushes.size === 1 && this.pending.length < 200)) return;
    const p: Promise<void> = (async () => {
      // Let results that finish together share one write.
      await new Promise((r) => setImmediate(r));
      while (this.pending.length > 0) await this.flushOnce();
    })().finally(() => {
      this.flushes.delete(p);
      if (this.pending.length > 0) this.scheduleFlush();
    });
    this.flushes.add(p);
  }

  private async flushOnce(): Promise<void> {
    const batch = this.pending.splice(0, BATCH);
    try {
      await this.write(batch);
    } catch (err) {
      if (!isDataFault(err)) {
        // The request was made and answered: the result is kept and written when the store takes
        // it. Nothing here counts against the destination — a store outage is not its fault.
        if (isStoreUnavailable(err))
          this.log.debug({ err, results: batch.length }, "writing results failed: store unavailable; will retry");
        else this.log.error({ err, results: batch.length }, "writing results failed; will retry");
        this.pending.unshift(...batch);
        await this.pause(RESULT_RETRY_MS);
        return;
      }
      this.log.warn({ err, results: batch.length }, "writing results failed; writing them again one destination at a time");
      await this.writeApart(batch, err);
      return;
    }
    this.done(batch.map((f) => f.deliveryId));
  }

  /** Each destination's results in a transaction of their own; one whose write fails is set aside. */
  private async writeApart(batch: FinishedSend[], batchErr: unknown): Promise<void> {
    const byDestination = groupBy(batch, (f) => f.destinationId);
    let requeued = false;
    for (const [destinationId, results] of byDestination) {
      let err: unknown = batchErr;
      if (byDestination.size > 1) {
        try {
          await this.write(results);
          this.done(results.map((f) => f.deliveryId));
          continue;
        } catch (e) {
          err = e;
        }
      }
      if (!isDataFault(err)) {
        this.pending.push(...results);
        requeued = true;
        continue;
      }
      const fault: Fault = { id: destinationId, code: "internal_error", detail: faultDetail("recording its results", err), error: err };
      try {
        const rows = await withRetry(this.db, async (q) => {
          const paused = await setAside(q, [fault]);
          // The requests were made: each counts as an attempt, and waits again while it is paused.
          await releaseLeases(q, results.map(leaseOf));
          return paused;
        });
        logSetAside(this.log, [fault], rows);
        this.opts.onAlerts?.();
        this.done(results.map((f) => f.deliveryId));
      } catch (e) {
        this.log.error({ err: e, destination_id: destinationId }, "could not set a destination aside; its results wait for the next write");
        this.pending.push(...results);
        requeued = true;
      }
    }
    // What went back to the queue is written again after a pause, not at once in a tight loop.
    if (requeued) await this.pause(RESULT_RETRY_MS);
  }

  private async write(batch: FinishedSend[]): Promise<void> {
    const nowMs = Date.now();
    const faults = new Map<string, Fault>();
    const decisions: (Decision & { f: FinishedSend })[] = [];
    for (const f of batch) {
      if (faults.has(f.destinationId)) continue;
      try {
        decisions.push({ f, ...decideDelivery(f, nowMs) });
      } catch (error) {
        faults.set(f.destinationId, {
          id: f.destinationId,
          code: "internal_error",
          detail: faultDetail("deciding a result", error),
          error,
        });
      }
    }
    const decided = faults.size ? decisions.filter((d) => !faults.has(d.f.destinationId)) : decisions;
    const destIds = [...new Set(batch.map((f) => f.destinationId))].sort();
    const health = this.opts.health ?? DEFAULT_HEALTH_CONFIG;
    const written = await withRetry(
      this.db,
      async (q) => {
        const faulty = new Map(faults);
        // Issued together (one round trip): the lock still runs first, and the write sees every claim it waited for.
        const [states, landed] = await Promise.all([
          lockDestinationsForResults(q, destIds),
          finishDeliveries(
            q,
            decided.map((d) => d.delivery),
            decided.map((d) => d.attempt),
            { citus: this.db.citus },
          ),
        ]);
        const byDest = new Map<string, Parameters<typeof decideDestination>[1]>();
        for (const d of decided) {
          if (!landed.has(d.f.deliveryId)) continue;
          const list = byDest.get(d.f.destinationId) ?? [];
          list.push({
            outcome: d.outcome,
            startedAt: d.f.startedAt,
            throttleSchedule: d.f.throttleSchedule,
            errorMessage: d.f.result.errorMessage,
            latencyMs: d.f.result.latencyMs,
          });
          byDest.set(d.f.destinationId, list);
        }
        const updates: DestinationUpdate[] = [];
        const alerts: AlertInput[] = [];
        for (const s of states) {
          const outcomes = byDest.get(s.id);
          if (!outcomes || faulty.has(s.id)) continue;
          const u = decideFor(s, outcomes, health);
          if ("fault" in u) {
            faulty.set(s.id, u.fault);
            continue;
          }
          updates.push(u);
          // Alerts on transitions only, written with the transition: never one per failure.
          if (u.transition) alerts.push(transitionAlert(s, u));
        }
        // A death is an alert too, written with it — once, however often this write-back runs.
        const died = decided
          .filter((d) => d.delivery.status === "dead" && landed.has(d.f.deliveryId))
          .map((d) => ({ destinationId: d.f.destinationId, id: d.f.deliveryId }));
        let aside: SetAsideRow[] = [];
        if (faulty.size > 0) {
          aside = await setAside(q, [...faulty.values()]);
          // Results not decided: their requests were made, so each counts as an attempt.
          await releaseLeases(q, batch.filter((f) => faults.has(f.destinationId)).map(leaseOf));
        }
        // Nothing to alert on (most write-backs): the update is the last statement, COMMIT rides with it.
        const last = alerts.length === 0 && died.length === 0;
        await updateDestinationsAfterResults(last ? lastStatement(q) : q, updates);
        const recorded = last ? 0 : await recordAlerts(q, [...alerts, ...(await deathAlerts(q, died))]);
        return { landed, updates, alerts: recorded + aside.length, states, faulty: [...faulty.values()], aside };
      },
      { genericPlans: true },
    );
    // Logged after the commit: each line says what the store now holds.
    const { landed, updates, alerts, states, faulty, aside } = written;
    const byId = new Map(states.map((st) => [st.id, st]));
    for (const d of decided) logAttempt(this.log, d, byId.get(d.f.destinationId), landed.has(d.f.deliveryId));
    for (const u of updates) logDestinationUpdate(this.log, byId.get(u.id)!, u);
    for (const u of updates) if (u.pauseCode) metrics.paused.inc({ reason: u.pauseCode });
    for (const u of updates) if (u.paceChange) metrics.paceChanges.inc({ direction: u.paceChange.direction, cause: u.paceChange.cause });
    if (faulty.length > 0) logSetAside(this.log, faulty, aside);
    if (alerts > 0) this.opts.onAlerts?.();
    for (const d of decided) {
      const errorClass = d.outcome.errorClass ?? "none";
      metrics.attempts.inc({ outcome: d.outcome.kind, error_class: errorClass });
      if (!landed.has(d.f.deliveryId)) metrics.leaseLost.inc();
      else if (d.delivery.status === "delivered" || d.delivery.status === "dead")
        metrics.deliveriesFinished.inc({ status: d.delivery.status });
      if (d.outcome.kind === "throttled") metrics.throttled.inc();
    }
  }
}

/**
 * The destination's update, or why it is set aside instead: its stored state is out of bounds,
 * or deciding threw.
 */
function decideFor(
  s: LockedDestinationState,
  outcomes: Parameters<typeof decideDestination>[1],
  health: HealthConfig,
): DestinationUpdate | { fault: Fault } {
  const problem = storedDestinationProblem(s);
  if (problem !== null) return { fault: { id: s.id, code: "invalid_config", detail: problem } };
  try {
    return decideDestination(s, outcomes, health);
  } catch (error) {
    return { fault: { id: s.id, code: "internal_error", detail: faultDetail("deciding its health and throttle", error), error } };
  }
}

/**
 * The store refused a value (SQLSTATE class 22, data exception: a time or number out of range;
 * 23, a constraint; 54, a program limit such as nesting too deep): something in the results, which
 * writing them one destination at a time pins on one. Anything else — the store away, a deadlock,
 * a bug in a statement — no destination caused: those results are written again later.
 */
function isDataFault(err: unknown): boolean {
  if (isStoreUnavailable(err) || isRetryableDbError(err)) return false;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^(22|23|54)/.test(code);
}

function leaseOf(f: FinishedSend): { destinationId: string; id: string; leaseToken: string } {
  return { destinationId: f.destinationId, id: f.deliveryId, leaseToken: f.leaseToken };
}

function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

function transitionAlert(d: LockedDestinationState, u: DestinationUpdate): AlertInput {
  const health = { status: u.healthStatus, score: u.score, consecutive_failures: u.consecutiveFailures };
  const window = { recent_attempts: u.healthWindow.length, recent_failures: [...u.healthWindow].filter((c) => c === "0").length };
  if (u.transition === "paused") {
    return alertInput(d, "destination.paused", u.pauseReason ?? "auto", health, { ...window, probed: u.pauseCause === "transient" });
  }
  return alertInput(
    d,
    "destination.degraded",
    `health fell to ${u.healthStatus} (score ${u.score}: ${window.recent_failures} of the last ${window.recent_attempts} attempts failed)`,
    health,
    window,
  );
}
