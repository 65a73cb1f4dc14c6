import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { sleep } from "../sleep.js";
import type { Db } from "../db/db.js";
import { withRetry, isStoreUnavailable } from "../db/db.js";
import { WORK_CHANNEL } from "../db/channels.js";
import { nextReadyDelayMs } from "../db/queries/claim.js";
import type { ClaimedDestination, LeasedDelivery } from "../db/queries/claim.js";
import { releaseLeases, abandonClaims } from "../db/queries/results.js";
import type { HealthConfig } from "../policy/health.js";
import { signedRequest, type Sender, type SendRequest } from "../delivery/sender.js";
import { metrics } from "../metrics.js";
import { claim } from "./claim.js";
import { faultDetail } from "./claim-plan.js";
import { logHoldTransition } from "./dispatch-log.js";
import { ResultWriter } from "./result-writer.js";
import { logSetAside, SetAsides } from "./set-aside.js";
import { probe } from "./probe.js";
import { classify } from "../policy/outcome.js";
import { traceIdOf } from "../policy/trace-context.js";
import { TRACING_OFF, type Tracing } from "../tracing/tracing.js";
import { startAttemptSpan, storedContext } from "./attempt-span.js";

/** Longest back-off between claims that failed (e.g. while the store is away). */
const CLAIM_RETRY_MAX_MS = 1_000;

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
  /** A span per attempt (docs/tracing.md); absent: off. */
  tracing?: Tracing;
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
  private readonly results: ResultWriter;
  private readonly probing = new Set<Promise<void>>();
  /** Set-asides outside a claim (a send or probe that threw): awaited at stop. */
  private readonly asides: SetAsides;
  private readonly wakers = new Set<() => void>();
  /** Counts wake-ups, so one that lands while a loop is busy (not asleep) is not lost. */
  private wakeSeq = 0;
  private unlisten: (() => Promise<void>) | null = null;
  private offAvailability: (() => void) | null = null;
  /** Lease tokens of claims that failed as the store went away: they may have committed anyway. */
  private uncertainClaims: string[] = [];
  private readonly tracing: Tracing;

  constructor(
    private readonly db: Db,
    private readonly sender: Sender,
    private readonly opts: DispatcherOptions,
    private readonly log: Logger,
  ) {
    this.results = new ResultWriter(
      db,
      log,
      { health: opts.health, onAlerts: opts.onAlerts },
      (ids) => {
        for (const id of ids) this.sending.delete(id);
        metrics.sendsInflight.set(this.sending.size);
        this.wake(); // slots were freed: there may be more to claim
      },
      (ms) => this.sleep(ms),
    );
    this.asides = new SetAsides(db, log, opts.onAlerts);
    this.tracing = opts.tracing ?? TRACING_OFF;
  }

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
    while ((this.sending.size > 0 || this.probing.size > 0 || this.asides.pending > 0) && Date.now() < deadline) await sleep(20);
    // Results wait for the store at most until the deadline (plus a moment to write once).
    const unwritten = await this.results.flush(Math.max(deadline, Date.now() + 2000));
    if (unwritten.length > 0) {
      // The store stayed away: these leases expire by themselves and the deliveries are sent again
      // (the duplicates invariant 6 allows for a worker that stops between sending and recording).
      this.log.warn(
        { results: unwritten.length, store: this.db.where },
        "stopping with results the store could not take; their deliveries will be sent again when their leases expire",
      );
      for (const f of unwritten) this.sending.delete(f.deliveryId);
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
      // Probes count: the sender's sockets are sized to this budget, so nothing waits for one.
      const capacity = this.opts.workerConcurrency - this.sending.size - this.probing.size - this.reserved;
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
            traced: this.tracing.on,
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
        for (const t of res.transitions) logHoldTransition(this.log, t);
        if (res.setAside.faults.length > 0) {
          logSetAside(this.log, res.setAside.faults, res.setAside.rows);
          this.opts.onAlerts?.();
        }
        for (const d of res.deliveries) this.send(d, res.destinations.get(d.destination_id)!);
        for (const d of res.probes) this.startProbe(d);
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
    const nowMs = Date.now();
    // Traced, the request carries the attempt span's context; else the context stored with the
    // event, if any, so the receiver still joins the publisher's trace.
    const span = this.tracing.on ? startAttemptSpan(this.tracing, this.log, d, dest, nowMs) : null;
    const trace = span ? span.headers : d.traceparent === null ? null : storedContext(d);
    let request: SendRequest;
    try {
      // The payload is spliced in as stored: no parse, no re-serialise.
      const body = `{"type":${JSON.stringify(d.type)},"timestamp":"${d.occurred_at}","data":${d.payload}}`;
      request = signedRequest(dest, d.event_id, body, nowMs, this.opts.userAgent, trace);
    } catch (error) {
      // No request was made: the lease is handed back uncounted, the destination set aside.
      this.asides.add({ id: dest.id, code: "internal_error", detail: faultDetail("signing its request", error), error }, [d.lease_token]);
      return;
    }
    this.sending.set(d.id, { destinationId: d.destination_id, deliveryId: d.id, leaseToken: d.lease_token });
    metrics.sendsInflight.set(this.sending.size);
    const startedAt = new Date(nowMs);
    this.sender
      .send(request)
      .then((result) => {
        span?.end(result, classify(result, Date.now()));
        metrics.attemptDuration.observe(result.latencyMs / 1000);
        if (result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300) {
          metrics.deliveryLatency.observe((Date.now() - d.created_ms) / 1000);
        }
        this.results.add({
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
          trace: span ? { trace_id: span.traceId, span_id: span.spanId } : trace ? { trace_id: traceIdOf(trace.traceparent)! } : undefined,
        });
      })
      .catch((error: unknown) => {
        // send() reports what the destination does as results; a throw is ours. Whether the
        // request went out is unknown: the lease is left to expire (the attempt then counts).
        this.sending.delete(d.id);
        this.asides.add({ id: dest.id, code: "internal_error", detail: faultDetail("sending its request", error), error }, []);
      });
  }

  private startProbe(dest: ClaimedDestination): void {
    const deps = {
      db: this.db,
      sender: this.sender,
      log: this.log,
      userAgent: this.opts.userAgent,
      asides: this.asides,
      onAlerts: this.opts.onAlerts,
      wake: () => this.wake(),
    };
    const p = probe(deps, dest);
    if (!p) return;
    const tracked: Promise<void> = p.finally(() => {
      this.probing.delete(tracked);
      this.wake(); // its slot is free
    });
    this.probing.add(tracked);
  }
}
