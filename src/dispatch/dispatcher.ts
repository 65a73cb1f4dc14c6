import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Db } from "../db/db.js";
import { lastStatement, withRetry, isStoreUnavailable } from "../db/db.js";
import { WORK_CHANNEL } from "../db/channels.js";
import { nextReadyDelayMs } from "../db/queries/claim.js";
import type { ClaimedDestination, LeasedDelivery } from "../db/queries/claim.js";
import {
  lockDestinationsForResults,
  finishDeliveries,
  updateDestinationsAfterResults,
  releaseLeases,
  abandonClaims,
  applyProbe,
  type LockedDestinationState,
  type DestinationUpdate,
} from "../db/queries/results.js";
import { alertInput, deathAlerts, recordAlerts, type AlertInput } from "../alerts/alerts.js";
import { classify } from "../policy/outcome.js";
import { healthClass, DEFAULT_HEALTH_CONFIG, type HealthConfig } from "../policy/health.js";
import { newId } from "../ids.js";
import { buildDeliveryHeaders, type Sender } from "../delivery/sender.js";
import { metrics } from "../metrics.js";
import { claim, type HoldTransition } from "./claim.js";
import { decideDelivery, decideDestination, type Decision, type FinishedSend } from "./decide.js";

/** Longest back-off between claims that failed (e.g. while the store is away). */
const CLAIM_RETRY_MAX_MS = 1_000;
/** Pause before writing results again after a failed write. */
const RESULT_RETRY_MS = 250;

export interface DispatcherOptions {
  workerConcurrency: number;
  claimBatchSize: number;
  /** Claim transactions run at once (default 1). */
  claimLoops?: number;
  grantCap: number;
  leaseMarginSeconds: number;
  /** See grantBuckets (default 0: exact at grant time). */
  rateSendJitterMs?: number;
  shard: [number, number] | null;
  userAgent: string;
  /** Longest idle sleep: a safety net should a notification be missed. */
  maxIdleMs?: number;
  health?: HealthConfig;
  /** Called after a write-back recorded alerts (to publish them without waiting for a poll). */
  onAlerts?: () => void;
}

interface InflightSend {
  destinationId: string;
  deliveryId: string;
  leaseToken: string;
}

/**
 * The worker: claims ready destinations, sends their granted deliveries through the shared
 * sender, and writes results back in batches. Idle, it sleeps until the next ready_at or a
 * notification — it never polls the deliveries table.
 */
export class Dispatcher {
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private readonly sending = new Map<string, InflightSend>();
  /** Send slots promised to claims under way, so overlapping claims never over-commit. */
  private reserved = 0;
  private pending: FinishedSend[] = [];
  private readonly flushes = new Set<Promise<void>>();
  private readonly probing = new Set<Promise<void>>();
  private readonly wakers = new Set<() => void>();
  /** Counts wake-ups, so one that lands while a loop is busy (not asleep) is not lost. */
  private wakeSeq = 0;
  private unlisten: (() => Promise<void>) | null = null;
  private offAvailability: (() => void) | null = null;
  /** Lease tokens of claims that failed as the store went away: they may have committed anyway. */
  private uncertainClaims: string[] = [];

  constructor(
    private readonly db: Db,
    private readonly sender: Sender,
    private readonly opts: DispatcherOptions,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    this.running = true;
    this.unlisten = await this.db.listen(WORK_CHANNEL, () => this.wake());
    // The store is back: claims and write-backs waiting out their back-off look at once.
    this.offAvailability = this.db.onAvailability((up) => {
      if (up) this.wake(true);
    });
    const loops = Math.max(1, this.opts.claimLoops ?? 1);
    this.loopDone = Promise.all(Array.from({ length: loops }, () => this.loop())).then(() => undefined);
  }

  /** Stops claiming, lets in-flight sends finish for up to `graceMs`, then releases the rest. */
  async stop(graceMs: number): Promise<void> {
    this.running = false;
    this.wake(true);
    await this.loopDone;
    if (this.unlisten) await this.unlisten();
    this.offAvailability?.();
    const deadline = Date.now() + graceMs;
    while ((this.sending.size > 0 || this.probing.size > 0) && Date.now() < deadline) await sleep(20);
    // Results wait for the store at most until the deadline (plus a moment to write once).
    await this.flush(Math.max(deadline, Date.now() + 2000));
    if (this.pending.length > 0) {
      // The store stayed away: these leases expire by themselves and the deliveries are sent again
      // (the duplicates invariant 6 allows for a worker that stops between sending and recording).
      this.log.warn(
        { results: this.pending.length, store: this.db.where },
        "stopping with results the store could not take; their deliveries will be sent again when their leases expire",
      );
      for (const f of this.pending) this.sending.delete(f.deliveryId);
      this.pending = [];
    }
    if (this.sending.size > 0) {
      const leases = [...this.sending.values()].map((s) => ({
        destinationId: s.destinationId,
        id: s.deliveryId,
        leaseToken: s.leaseToken,
      }));
      try {
        const released = await withRetry(this.db, (q) => releaseLeases(q, leases));
        this.log.info({ released }, "released leases of unfinished sends");
      } catch (err) {
        this.log.warn({ err, leases: leases.length }, "could not release the leases of unfinished sends; they expire by themselves");
      }
      this.sending.clear();
    }
  }

  get inflight(): number {
    return this.sending.size;
  }

  /**
   * New work, or freed slots: one sleeping claim loop looks (a loop that is busy looks again
   * when it finishes, see wakeSeq). Waking every loop for one event would send them all to
   * race for it, and all but one would find nothing; a loop that finds a full batch wakes the
   * next (loop), so under load they all run. `all`: stopping, or the store is back.
   */
  private wake(all = false): void {
    this.wakeSeq++;
    for (const w of this.wakers) {
      this.wakers.delete(w);
      w();
      if (!all) break;
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const waker = () => {
        clearTimeout(t);
        resolve();
      };
      const t = setTimeout(() => {
        this.wakers.delete(waker);
        resolve();
      }, ms);
      this.wakers.add(waker);
    });
  }

  private async loop(): Promise<void> {
    const maxIdleMs = this.opts.maxIdleMs ?? 30_000;
    let errors = 0;
    while (this.running) {
      const seq = this.wakeSeq;
      const capacity = this.opts.workerConcurrency - this.sending.size - this.reserved;
      if (capacity <= 0) {
        await this.sleep(1000); // a finished send wakes us sooner
        continue;
      }
      this.reserved += capacity;
      try {
        const end = metrics.claimDuration.startTimer();
        const leaseToken = randomUUID();
        let res;
        try {
          // Inside the try whose finally gives the reservation back: a throw here must not leak it.
          if (this.uncertainClaims.length > 0) await this.abandonUncertainClaims();
          res = await claim(this.db, {
            capacity,
            batchSize: this.opts.claimBatchSize,
            grantCap: this.opts.grantCap,
            leaseMarginSeconds: this.opts.leaseMarginSeconds,
            rateSendJitterMs: this.opts.rateSendJitterMs ?? 0,
            shard: this.opts.shard,
            leaseToken,
          });
        } catch (err) {
          // The store may have committed the claim just before it went away: undo it once it is back.
          if (isStoreUnavailable(err) && !this.uncertainClaims.includes(leaseToken)) this.uncertainClaims.push(leaseToken);
          throw err;
        } finally {
          this.reserved -= capacity;
          end();
        }
        errors = 0;
        if (res.slotDenied) metrics.slotDenied.inc(res.slotDenied);
        for (const t of res.transitions) this.logHoldTransition(t);
        for (const d of res.deliveries) this.send(d, res.destinations.get(d.destination_id)!);
        for (const d of res.probes) this.probe(d);
        // A full batch: more destinations may be ready than one claim takes, so another loop looks too.
        if (res.claimedCount >= this.opts.claimBatchSize) this.wake();
        // Otherwise a claim that sent something does not look again at once: idle, that second
        // claim finds nothing and only competes with the sends just begun.
        if (res.again) continue;
        const delay = await nextReadyDelayMs(this.db);
        if (!this.running) break;
        // A destination can be "ready now" yet yield nothing (its rows locked by a concurrent
        // writer): a short pause keeps that from becoming a spin.
        // A notification that arrived since this claim began means new work: look again now.
        if (this.wakeSeq !== seq) continue;
        await this.sleep(delay === null ? maxIdleMs : Math.min(maxIdleMs, Math.max(5, delay)));
      } catch (err) {
        errors++;
        // An unreachable store is logged once, where the store is watched; anything else is a bug.
        if (isStoreUnavailable(err)) this.log.debug({ err }, "claim failed: store unavailable");
        else this.log.error({ err }, "claim failed");
        // Short and capped: claims resume within about a second of the store's return (a
        // reconnect also wakes this sleep early).
        await this.sleep(Math.min(CLAIM_RETRY_MAX_MS, 50 * 2 ** Math.min(errors, 5)));
      }
    }
  }

  /** Hands back what claims with unconfirmed commits may have leased; throws while the store is away. */
  private async abandonUncertainClaims(): Promise<void> {
    const tokens = [...this.uncertainClaims];
    const n = await withRetry(this.db, (q) => abandonClaims(q, tokens));
    this.uncertainClaims = this.uncertainClaims.filter((t) => !tokens.includes(t));
    if (n > 0)
      this.log.info(
        { deliveries: n },
        "handed back deliveries leased by a claim the store committed as it went away; no request was made for them",
      );
  }

  private send(d: LeasedDelivery, dest: ClaimedDestination): void {
    this.sending.set(d.id, { destinationId: d.destination_id, deliveryId: d.id, leaseToken: d.lease_token });
    metrics.sendsInflight.set(this.sending.size);
    const occurredAt = d.occurred_at;
    // The payload is spliced in as stored: no parse, no re-serialise.
    const body = `{"type":${JSON.stringify(d.type)},"timestamp":"${occurredAt}","data":${d.payload}}`;
    const nowMs = Date.now();
    const secrets = dest.secrets.filter((s) => s.expires_at === null || Date.parse(s.expires_at) > nowMs).map((s) => s.secret);
    const startedAt = new Date(nowMs);
    const headers = buildDeliveryHeaders({
      msgId: d.event_id,
      timestampSeconds: Math.floor(nowMs / 1000),
      body,
      secrets,
      userAgent: this.opts.userAgent,
      custom: dest.headers,
    });
    this.sender
      .send({ url: dest.url, body, headers, timeoutMs: dest.timeout_seconds * 1000 })
      .then((result) => {
        metrics.attemptDuration.observe(result.latencyMs / 1000);
        if (result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300) {
          metrics.deliveryLatency.observe((Date.now() - d.created_ms) / 1000);
        }
        this.pending.push({
          destinationId: d.destination_id,
          deliveryId: d.id,
          leaseToken: d.lease_token,
          attemptNo: d.attempts,
          failuresBefore: d.failures,
          retrySchedule: dest.retry_schedule_seconds,
          throttleSchedule: dest.throttle_schedule_seconds,
          startedAt,
          publishedMs: d.created_ms,
          result,
        });
        this.scheduleFlush();
      })
      .catch((err: unknown) => {
        // send() reports problems as results; reaching here is a bug. The lease will expire
        // and the delivery come back by itself.
        this.log.error({ err, delivery_id: d.id }, "sender threw");
        this.sending.delete(d.id);
      });
  }

  /**
   * A paused destination's probe: a signed `webhook.probe` with empty data. Success resumes it
   * on a ramp; failure schedules the next probe (both decided in applyProbe).
   */
  private probe(dest: ClaimedDestination): void {
    const probeId = newId("prb");
    const nowMs = Date.now();
    const body = `{"type":"webhook.probe","timestamp":"${new Date(nowMs).toISOString()}","data":{}}`;
    const secrets = dest.secrets.filter((s) => s.expires_at === null || Date.parse(s.expires_at) > nowMs).map((s) => s.secret);
    const headers = buildDeliveryHeaders({
      msgId: probeId,
      timestampSeconds: Math.floor(nowMs / 1000),
      body,
      secrets,
      userAgent: this.opts.userAgent,
      custom: dest.headers,
    });
    const p = (async () => {
      const result = await this.sender.send({ url: dest.url, body, headers, timeoutMs: dest.timeout_seconds * 1000 });
      const outcome = classify(result, Date.now());
      const ok = outcome.kind === "success";
      metrics.probes.inc({ outcome: ok ? "success" : "failure" });
      const applied = await withRetry(this.db, async (q) => {
        const a = await applyProbe(q, {
          destinationId: dest.id,
          probeId,
          startedAt: new Date(nowMs),
          latencyMs: result.latencyMs,
          ok,
          statusCode: outcome.statusCode,
          errorClass: outcome.errorClass,
          healthClass: healthClass(outcome),
          errorMessage: result.errorMessage,
          responseBody: result.responseBody === "" ? null : result.responseBody,
        });
        if (a.resumed && a.destination) {
          await recordAlerts(q, [
            alertInput(
              a.destination,
              "destination.resumed",
              `a probe succeeded (${describeProbe(result.statusCode)}); delivery resumes, starting at concurrency 1`,
              { status: "healthy", score: 100, consecutive_failures: 0 },
            ),
          ]);
        }
        return a;
      });
      const ids = { tenant_id: dest.tenant_id, destination_id: dest.id };
      const answer = { status_code: outcome.statusCode, error_class: outcome.errorClass, latency_ms: Math.round(result.latencyMs) };
      if (applied.resumed) {
        this.log.info(
          { ...ids, ...answer, by: "probe", ramp_limit: dest.max_concurrency > 1 ? 1 : null },
          "probe succeeded: destination resumed on a ramp",
        );
        this.opts.onAlerts?.();
        this.wake();
      } else if (!ok && applied.nextProbeAt) {
        this.log.info({ ...ids, ...answer, next_probe_at: applied.nextProbeAt.toISOString() }, "probe failed: destination stays paused");
        // The claim that sent the probe planned the next look after the probe's lease; the next
        // probe is due sooner than that, and an idle loop would sleep through it.
        this.wake();
      } else {
        // Resumed or deleted meanwhile: the probe's answer changed nothing.
        this.log.debug({ ...ids, ...answer }, "probe answered; the destination is no longer paused for a probe");
      }
    })()
      .catch((err: unknown) =>
        this.log[isStoreUnavailable(err) ? "debug" : "error"](
          { err, destination_id: dest.id },
          "probe failed to record; the next one is already scheduled",
        ),
      )
      .finally(() => this.probing.delete(p));
    this.probing.add(p);
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

  /** Writes every pending result, giving up at `deadlineMs` if the store will not take them. */
  private async flush(deadlineMs = Infinity): Promise<void> {
    while (this.flushes.size > 0 && Date.now() < deadlineMs) await Promise.race([Promise.all(this.flushes), sleep(100)]);
    while (this.pending.length > 0 && Date.now() < deadlineMs) await this.flushOnce();
  }

  private async flushOnce(): Promise<void> {
    const batch = this.pending.splice(0, 1000);
    try {
      await this.writeResults(batch);
    } catch (err) {
      // The request was made and answered: the result is kept and written when the store takes
      // it. Nothing here counts against the destination — a store outage is not its fault.
      if (isStoreUnavailable(err)) this.log.debug({ err, results: batch.length }, "writing results failed: store unavailable; will retry");
      else this.log.error({ err, results: batch.length }, "writing results failed; will retry");
      this.pending.unshift(...batch);
      await this.sleep(RESULT_RETRY_MS);
      return;
    }
    for (const f of batch) this.sending.delete(f.deliveryId);
    metrics.sendsInflight.set(this.sending.size);
    this.wake(); // slots were freed: there may be more to claim
  }

  private async writeResults(batch: FinishedSend[]): Promise<void> {
    const nowMs = Date.now();
    const decisions = batch.map((f) => ({ f, ...decideDelivery(f, nowMs) }));
    const destIds = [...new Set(batch.map((f) => f.destinationId))].sort();
    await withRetry(
      this.db,
      async (q) => {
        // Issued together (one round trip): the lock still runs first, and the write sees every claim it waited for.
        const [states, landed] = await Promise.all([
          lockDestinationsForResults(q, destIds),
          finishDeliveries(
            q,
            decisions.map((d) => d.delivery),
            decisions.map((d) => d.attempt),
          ),
        ]);
        const byDest = new Map<string, Parameters<typeof decideDestination>[1]>();
        for (const d of decisions) {
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
        const touched = states.filter((s) => byDest.has(s.id));
        const updates = touched.map((s) => decideDestination(s, byDest.get(s.id)!, this.opts.health ?? DEFAULT_HEALTH_CONFIG));
        // Alerts on transitions only, written with the transition: never one per failure.
        const alerts = updates.flatMap((u, i) => (u.transition ? [transitionAlert(touched[i]!, u)] : []));
        // A death is an alert too, written with it — once, however often this write-back runs.
        const died = decisions
          .filter((d) => d.delivery.status === "dead" && landed.has(d.f.deliveryId))
          .map((d) => ({ destinationId: d.f.destinationId, id: d.f.deliveryId }));
        // Nothing to alert on (most write-backs): the update is the last statement, COMMIT rides with it.
        await updateDestinationsAfterResults(alerts.length === 0 && died.length === 0 ? lastStatement(q) : q, updates);
        const recorded = await recordAlerts(q, [...alerts, ...(await deathAlerts(q, died))]);
        return { landed, updates, alerts: recorded, states };
      },
      { genericPlans: true },
    ).then(({ landed, updates, alerts, states }) => {
      // Logged after the commit: each line says what the store now holds.
      const byId = new Map(states.map((st) => [st.id, st]));
      for (const d of decisions) this.logAttempt(d, byId.get(d.f.destinationId), landed.has(d.f.deliveryId));
      for (const u of updates) this.logDestinationUpdate(byId.get(u.id)!, u);
      for (const u of updates) if (u.pauseCode) metrics.paused.inc({ reason: u.pauseCode });
      for (const u of updates) if (u.paceChange) metrics.paceChanges.inc({ direction: u.paceChange.direction, cause: u.paceChange.cause });
      if (alerts > 0) this.opts.onAlerts?.();
      for (const d of decisions) {
        const errorClass = d.outcome.errorClass ?? "none";
        metrics.attempts.inc({ outcome: d.outcome.kind, error_class: errorClass });
        if (!landed.has(d.f.deliveryId)) metrics.leaseLost.inc();
        else if (d.delivery.status === "delivered" || d.delivery.status === "dead")
          metrics.deliveriesFinished.inc({ status: d.delivery.status });
        if (d.outcome.kind === "throttled") metrics.throttled.inc();
      }
    });
  }

  // Log lines (docs/logs.md): one per attempt that did not succeed, one per state transition.
  // Ids, status, classes and times only — never payloads, response bodies, headers or secrets.

  private logAttempt(d: Decision & { f: FinishedSend }, state: LockedDestinationState | undefined, landed: boolean): void {
    // Successes are most results: build nothing for a line the level drops.
    if (landed && d.outcome.kind === "success" && !this.log.isLevelEnabled("debug")) return;
    const fields = {
      tenant_id: state?.tenant_id,
      destination_id: d.f.destinationId,
      delivery_id: d.f.deliveryId,
      attempt: d.f.attemptNo,
      status_code: d.outcome.statusCode,
      error_class: d.outcome.errorClass,
      latency_ms: Math.round(d.f.result.latencyMs),
    };
    if (!landed) {
      // The lease expired first: the delivery was handed back and is someone else's now.
      this.log.info({ ...fields, next: "none: lease expired before the result was recorded" }, "attempt result too late");
      return;
    }
    switch (d.outcome.kind) {
      case "success":
        this.log.debug(fields, "attempt delivered");
        return;
      case "throttled":
        this.log.info(
          { ...fields, retry_after_seconds: d.outcome.retryAfterSeconds, next: "waits for the destination's throttle hold" },
          "attempt throttled",
        );
        return;
      default: {
        const { status, delaySeconds } = d.delivery;
        const next = status === "dead" ? "dead" : status === "retry_scheduled" ? "retry" : "held while the destination is paused";
        // The store set next_attempt_at from its own now(), which state.now is (same transaction).
        const retryAt =
          status === "retry_scheduled" && delaySeconds !== null && state
            ? new Date(state.now.getTime() + delaySeconds * 1000).toISOString()
            : undefined;
        this.log.info({ ...fields, next, ...(retryAt ? { retry_at: retryAt } : {}) }, "attempt failed");
      }
    }
  }

  private logDestinationUpdate(s: LockedDestinationState, u: DestinationUpdate): void {
    const ids = { tenant_id: s.tenant_id, destination_id: s.id };
    if (u.paceChange && u.paceState) {
      // A cut is news (the receiver pushed back); a raise happens every second while it climbs.
      const fields = { ...ids, rate_per_second: u.paceState.rate, concurrency: u.paceState.concurrency, reason: u.paceState.reason };
      if (u.paceChange.direction === "down") this.log.info(fields, "adaptive pace cut");
      else this.log.debug(fields, "adaptive pace raised");
    }
    if (u.throttleSeconds !== null) {
      // The write keeps a longer hold already in force (same now(): one transaction), so only a
      // new or longer hold changes anything. A longer one with the same reason is the same
      // episode's other in-flight requests answering 429 too: not a new transition.
      const untilMs = s.now.getTime() + u.throttleSeconds * 1000;
      const inForce = s.throttled_until !== null && s.throttled_until > s.now;
      if (s.throttled_until === null || untilMs > s.throttled_until.getTime()) {
        const fields = {
          ...ids,
          throttled_until: new Date(untilMs).toISOString(),
          hold_seconds: u.throttleSeconds,
          reason: u.throttleReason,
          extended: inForce,
        };
        if (!inForce || u.throttleReason !== (s.throttle_reason ?? null)) this.log.info(fields, "destination throttled");
        else this.log.debug(fields, "throttle hold extended");
      }
    }
    if (u.transition === "paused") {
      this.log.warn(
        {
          ...ids,
          by: "health",
          reason: u.pauseReason,
          cause: u.pauseCause,
          code: u.pauseCode,
          score: u.score,
          consecutive_failures: u.consecutiveFailures,
        },
        "destination paused",
      );
    } else if (u.transition === "degraded") {
      this.log.warn(
        { ...ids, health_status: u.healthStatus, score: u.score, consecutive_failures: u.consecutiveFailures },
        "destination degraded",
      );
    }
  }

  private logHoldTransition(t: HoldTransition): void {
    const ids = { tenant_id: t.destination.tenant_id, destination_id: t.destination.id };
    if (t.kind === "rate_limited") {
      if (t.holding)
        this.log.info({ ...ids, rate_limit: t.destination.rate_limit }, "destination rate-limited: backlog waiting for tokens");
      else this.log.info(ids, "rate limit no longer holding");
    } else if (t.holding) {
      this.log.info(
        { ...ids, quiet_until: t.until?.toISOString() ?? null, timezone: t.destination.delivery_schedule?.timezone },
        "quiet hours: holding deliveries",
      );
    } else {
      const w = t.window
        ? { quiet_from: new Date(t.window.startMs).toISOString(), quiet_until: new Date(t.window.endMs).toISOString() }
        : {};
      this.log.info({ ...ids, ...w }, "quiet hours: releasing held deliveries");
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
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

function describeProbe(statusCode: number | null): string {
  return statusCode === null ? "no answer" : `HTTP ${statusCode}`;
}
