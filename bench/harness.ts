// One measured run, the same for Sluice and for the baseline: a fresh receiver, the system set
// up against it, the events published in batches (each stamped with sent_at), then a wait for
// the last delivery or the deadline, whichever comes first.
import { join } from "node:path";
import { Receiver } from "./receiver.js";
import { CpuSampler, machineBusyPct } from "./procs.js";
import { PgActivitySampler } from "./diagnostics.js";
import { deriveFigures, type RunResult, type Scenario, type System } from "./report.js";

/** One event of the workload: event `seq` goes to destination `dest` (round-robin). */
export interface BenchEvent {
  seq: number;
  dest: number;
  /** Unix ms when its batch was handed to the system; the receiver subtracts it. */
  sentAt: number;
}

export interface SystemUnderTest {
  /** Process trees whose CPU counts as the system's own. */
  pids(): number[];
  publishBatch(batch: BenchEvent[]): Promise<void>;
  /** Database-side tally after the run, when there is a database we can look into. */
  endState(): Promise<Record<string, number> | null>;
  /** The system's own figures about itself (Sluice: its /metrics), when it has any. */
  engineMetrics(): Promise<Record<string, number> | null>;
  stop(): Promise<void>;
  settings: RunResult["settings"];
  notes: string[];
}

export interface MeasureOptions {
  system: System;
  scenario: Scenario;
  store: "postgres" | "pglite";
  destinations: number;
  events: number;
  delayMs: number;
  batchSize: number;
  publishConcurrency: number;
  timeoutMs: number;
  logDir: string;
  postmasterPid: () => number | null;
  /** The system's database on the server, to sample what its connections do; null for PGlite. */
  databaseUrl: string | null;
  /** max_concurrency to check at the receiver (null: the system has none to check). */
  perDestinationCap: number | null;
  /** Receiver ports (origins) the destinations are spread over. */
  receiverPorts: number;
  /** Wait up to this long for the machine to go quiet (other processes) before starting. */
  waitQuietMs: number;
  setup: (receiver: Receiver, deadline: number) => Promise<SystemUnderTest>;
}

/** Waits until the machine is below `maxBusyPct` of one core busy; returns the last reading. */
async function waitQuiet(maxMs: number, maxBusyPct = 25): Promise<{ busy: number; waitedMs: number }> {
  const from = Date.now();
  let busy = await machineBusyPct(1000);
  let told = false;
  while (busy > maxBusyPct && Date.now() - from < maxMs) {
    if (!told) process.stderr.write(`  machine busy (${busy}% of one core from other processes); waiting up to ${Math.round(maxMs / 1000)} s for it to go quiet\n`);
    told = true;
    busy = await machineBusyPct(2000);
  }
  return { busy, waitedMs: Date.now() - from };
}

/** `p`, unless the deadline comes first (a hung system must not hang the bench). */
async function beforeDeadline<T>(p: Promise<T>, deadline: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish before the run's deadline`)), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

export async function measure(o: MeasureOptions): Promise<RunResult> {
  const label = `${o.system} ${o.scenario}`;
  const quiet = o.waitQuietMs > 0 ? await waitQuiet(o.waitQuietMs) : null;
  const startedAt = Date.now();
  const deadline = startedAt + o.timeoutMs;
  const result: RunResult = {
    system: o.system, scenario: o.scenario, store: o.store, destinations: o.destinations, events: o.events,
    receiverDelayMs: o.delayMs, settings: {}, status: "error", error: null, publish: null,
    received: 0, duplicates: 0, misrouted: 0, totalRequests: 0, measuredMs: null, deliveriesPerSec: null,
    steadyStatePerSec: null, latencyMs: null, maxInflight: 0, maxInflightPerDestination: 0, receiverConnections: 0, peakOpenConnections: 0,
    perDestinationCap: o.perDestinationCap, overCapRequests: 0, destinationsOverCap: 0,
    cpu: {}, wallMs: 0, endState: null, pgActivity: null, engineMetrics: null, notes: [],
  };
  if (quiet && quiet.busy > 25) result.notes.push(`started although the machine was ${quiet.busy}% busy with other processes (waited ${Math.round(quiet.waitedMs / 1000)} s)`);
  process.stderr.write(`\n▶ ${label}: ${o.destinations.toLocaleString("en-US")} destinations, ${o.events.toLocaleString("en-US")} events, receiver delay ${o.delayMs} ms\n`);

  let receiver: Receiver | null = null;
  let sut: SystemUnderTest | null = null;
  let sampler: CpuSampler | null = null;
  let activity: PgActivitySampler | null = null;
  let publishStartAt = 0;
  let publishEndAt = 0;
  try {
    receiver = await Receiver.start({
      delayMs: o.delayMs, expected: o.events, destinations: o.destinations, label,
      cap: o.perDestinationCap ?? 0, ports: o.receiverPorts,
      logFile: join(o.logDir, `${o.system}-${o.scenario}-receiver.log`),
    });
    const rcv = receiver;
    sut = await beforeDeadline(o.setup(rcv, deadline), deadline, "setting up");
    result.settings = sut.settings;
    const sys = sut;
    sampler = new CpuSampler(() => ({
      [o.system]: { pids: sys.pids(), tree: true },
      postgres: { pids: [o.postmasterPid() ?? -1], tree: true },
      receiver: { pids: [rcv.pid], tree: false },
      "bench (publisher)": { pids: [process.pid], tree: false },
    }));
    process.stderr.write(`  set up in ${((Date.now() - startedAt) / 1000).toFixed(1)} s; publishing\n`);

    publishStartAt = Date.now();
    rcv.measureFrom = publishStartAt;
    sampler.begin();
    if (o.databaseUrl) {
      activity = new PgActivitySampler(o.databaseUrl);
      await activity.begin();
    }
    const batches = Math.ceil(o.events / o.batchSize);
    let next = 0;
    let timedOut = false;
    const publisher = async (): Promise<void> => {
      for (;;) {
        const b = next++;
        if (b >= batches || timedOut) return;
        if (Date.now() > deadline) {
          timedOut = true;
          return;
        }
        const batch: BenchEvent[] = [];
        const sentAt = Date.now();
        for (let seq = b * o.batchSize; seq < Math.min(o.events, (b + 1) * o.batchSize); seq++) {
          batch.push({ seq, dest: seq % o.destinations, sentAt });
        }
        await beforeDeadline(sys.publishBatch(batch), deadline, `publishing batch ${b + 1}`);
        rcv.published += batch.length;
      }
    };
    await Promise.all(Array.from({ length: o.publishConcurrency }, publisher));
    publishEndAt = Date.now();
    const publishMs = publishEndAt - publishStartAt;
    result.publish = { ms: publishMs, eventsPerSec: rcv.published / Math.max(0.001, publishMs / 1000), batches: Math.ceil(rcv.published / o.batchSize) };
    process.stderr.write(`  published ${rcv.published.toLocaleString("en-US")} events in ${(publishMs / 1000).toFixed(1)} s\n`);

    const doneAt = timedOut ? null : await rcv.waitDone(deadline);
    result.status = doneAt !== null ? "complete" : "timeout";
    if (doneAt === null) result.notes.push(`stopped at the ${Math.round(o.timeoutMs / 1000)} s deadline with ${rcv.received.toLocaleString("en-US")} of ${o.events.toLocaleString("en-US")} received`);
  } catch (err) {
    result.status = "error";
    result.error = err instanceof Error ? err.message : String(err);
    process.stderr.write(`  ✗ ${label} failed: ${result.error}\n`);
  } finally {
    if (sampler) {
      result.cpu = sampler.end();
      const other = result.cpu["(other processes, kernel)"]?.pctOfOneCore ?? 0;
      if (other > 25) result.notes.push(`${other}% of one core went to processes outside this run (or the kernel): the figures are disturbed`);
    }
    if (activity) result.pgActivity = await activity.end();
    if (receiver && publishStartAt > 0) {
      try {
        // Let a duplicate that is on its way arrive before we count.
        await new Promise((r) => setTimeout(r, 500));
        const rep = await receiver.report(publishEndAt || Date.now());
        Object.assign(result, deriveFigures(rep, { publishStartAt, publishEndAt: publishEndAt || Date.now() }));
        if (rep.malformed > 0) result.notes.push(`${rep.malformed} requests had a body the receiver could not read`);
      } catch (err) {
        result.notes.push(`receiver report failed: ${(err as Error).message}`);
      }
    }
    if (sut) {
      result.notes.push(...sut.notes);
      result.endState = await sut.endState().catch((err: unknown) => {
        result.notes.push(`end-state query failed: ${(err as Error).message}`);
        return null;
      });
      result.engineMetrics = await sut.engineMetrics().catch(() => null);
      await sut.stop().catch((err: unknown) => result.notes.push(`stop failed: ${(err as Error).message}`));
    }
    if (receiver) await receiver.stop();
    result.wallMs = Date.now() - startedAt;
  }
  return result;
}
