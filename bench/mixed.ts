// `npm run bench:mixed` (issue 34): under a mixed workload on a Postgres server, does publishing
// keep its pace and do the healthy destinations keep their latency, minute after minute — or do
// publishing and the result write-back deadlock on destination rows?
//
// The reported workload: 100 destinations — 80 answer 200 at once, 10 answer 429 (Retry-After: 1)
// to one request in five and 200 at once to the others, 5 always answer 500 (they auto-pause),
// 5 answer 200 after 200 ms — and a publisher asked for 1,500 events/s: one POST /v1/events/batch
// of 150 events every 100 ms, each event to one destination, round robin over all of them
// (destination_ids). Batch k is due at start + k × 100 ms and goes once it is due and the batch
// before it has been answered: one at a time, so answers slower than the interval make the
// publisher fall behind its schedule, and what is still due when the time is up is not sent.
//
// Every --sample-seconds the bench prints one row for the window just ended:
//   asked/s, published/s   events due in the window by the schedule, and those in batches answered
//                          202 in it; "behind": events due by then and not yet sent
//   answer p50/p99         publish answer time: POST sent → its answer read, of the batches answered
//                          in the window
//   healthy/s, p→r         distinct deliveries first received by the healthy destinations in the
//                          window, and their publish → receive latency: the receiver's clock when
//                          the request's headers were parsed − the payload's sent_at, the bench's
//                          wall clock (ms) just before its batch's POST was sent; so it includes
//                          the publish request itself and all queueing
//   deadlocks              the store's pg_stat_database.deadlocks, change over the window
//   lock waiters           this database's sessions with wait_event_type 'Lock' (pg_stat_activity),
//                          sampled twice a second: at the window's last sample and on average, and
//                          the longest wait seen (pg_locks.waitstart)
// After publishing, a drain (up to --timeout-s) until the healthy destinations got everything
// they were sent; then the totals, the deliveries' end state per kind, and a verdict against the
// claim. One throwaway durable Postgres; `sluice start` as reported (--workers N: `sluice api` +
// N × `sluice worker`); two receiver processes on 127.0.0.1, one for the healthy destinations
// (each on its own path), one for the others. A warm-up of the same workload comes first, not
// measured. Prints as it goes; writes bench/results/mixed-<time>.json.
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type pg from "pg";
import { connect, withDatabase } from "./pg.js";
import { clusterFlags, CpuSampler, parseFlags, runBench, sleep, waitQuiet } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, mark } from "./report.js";
import { REPO, SluiceCluster } from "./sluice.js";

const flags = () =>
  parseFlags("npm run bench:mixed", {
    destinations: { def: 100, min: 4, help: "destinations in all, split by --mix" },
    mix: {
      type: "str",
      arg: "H/T/F/S",
      def: "80/10/5/5",
      help: "shares of the destinations: healthy (200 at once) / throttled (429 to one request in --throttle-one-in) / failing (always 500) / slow (200 after --slow-ms)",
    },
    rate: { def: 1500, help: "events/s the publisher is asked for" },
    batch: { def: 150, help: "events per POST /v1/events/batch (≤ 1,000); one batch every batch ÷ rate s, one at a time" },
    minutes: { def: 10, quick: 1, help: "publishing time, minutes" },
    "sample-seconds": { def: 30, quick: 10, help: "one table row every N s" },
    "warmup-s": { def: 10, quick: 5, min: 0, help: "publish the same workload this long first, not measured" },
    "slow-ms": { def: 200, min: 0, help: "the slow destinations' answer delay, ms" },
    "retry-after": { arg: "S", def: 1, help: "the throttled destinations' Retry-After, seconds" },
    "throttle-one-in": { def: 5, help: "the throttled destinations answer 429 to one request in N, 200 at once to the others" },
    ...clusterFlags(120),
    workers: { def: 0, min: 0, help: "sluice worker processes beside one sluice api (default 0: one sluice start process, as reported)" },
    "timeout-s": { def: 120, help: "after publishing, wait up to N s for the healthy destinations to get everything (the drain)" },
    "sluice-dir": {
      type: "str",
      arg: "DIR",
      help: "run the Sluice of another checkout (with node_modules), e.g. a `git archive` of the commit before a fix",
    },
    quick: { type: "bool", help: "smoke run: 1 minute, a row every 10 s, 5 s of warm-up" },
  });
type Flags = ReturnType<typeof flags>;

const KINDS = ["healthy", "throttled", "failing", "slow"] as const;
type Kind = (typeof KINDS)[number];

const CLAIM =
  "publishing keeps the asked rate with its answer time flat, and the healthy destinations get everything they are sent " +
  "with publish→receive p99 under 200 ms, for the whole run";
const LATENCY_P99_LIMIT_MS = 200;
// A window cuts at most one batch in two; 95 % leaves room for that in a 10 s window, not for falling behind.
const RATE_SHARE = 0.95;
const LOCK_SAMPLE_MS = 500;

/** Each destination's kind by index: `n` split by the --mix shares, in KINDS order (healthy takes the rounding). */
function layout(n: number, mix: string): Kind[] {
  const shares = mix.split("/").map(Number);
  if (shares.length !== KINDS.length || shares.some((s) => !Number.isFinite(s) || s < 0))
    throw new Error(`--mix takes four shares healthy/throttled/failing/slow, e.g. 80/10/5/5, not '${mix}'`);
  const total = shares.reduce((a, b) => a + b, 0);
  const counts = shares.map((s) => Math.round((n * s) / total));
  counts[0] = n - counts.slice(1).reduce((a, b) => a + b, 0);
  if (counts[0] < 1) throw new Error(`--mix ${mix} leaves none of the ${n} destinations healthy`);
  return KINDS.flatMap((k, i) => Array<Kind>(counts[i]!).fill(k));
}

const countOf = (kinds: Kind[], k: Kind): number => kinds.filter((x) => x === k).length;

/** The healthy destinations on their own paths of the healthy receiver; the others on the other receiver. */
function destinationUrl(kind: Kind, i: number, healthy: Receiver, others: Receiver): string {
  if (kind === "healthy") return healthy.destUrl(i);
  if (kind === "slow") return others.url(`/d/slow-${i}`);
  return others.url(kind === "throttled" ? "/throttled" : "/failing");
}

type Pct = { p50: number; p99: number; max: number };

/** Nearest-rank percentiles (as the receiver computes them); null for none. */
function percentiles(values: number[]): Pct | null {
  if (values.length === 0) return null;
  const v = [...values].sort((a, b) => a - b);
  const at = (p: number): number => v[Math.min(v.length - 1, Math.floor((p / 100) * v.length))]!;
  return { p50: at(50), p99: at(99), max: v[v.length - 1]! };
}

// ---- the publisher ---------------------------------------------------------------------------

type Answer = { sentAt: number; answeredAt: number; events: number; ok: boolean };

/**
 * The reported publisher (see the header). Healthy destinations' events carry a `seq`, which the
 * healthy receiver counts and times; the others' events carry none. Only the timed run's batches
 * are recorded.
 */
class Publisher {
  readonly answers: Answer[] = [];
  /** The first refusals and surprises, verbatim. */
  readonly notes: string[] = [];
  batchesSent = 0;
  healthyAccepted = 0;
  private nextEvent = 0;
  private nextSeq = 0;
  private schedule = { startAt: 0, batches: 0 };

  constructor(
    private readonly cluster: SluiceCluster,
    private readonly ids: string[],
    private readonly kinds: Kind[],
    readonly batch: number,
    readonly intervalMs: number,
  ) {}

  /** Publishes on the schedule from `startAt` for `ms`; `timed` false: a warm-up, not recorded. */
  async run(startAt: number, ms: number, timed: boolean): Promise<void> {
    const batches = Math.round(ms / this.intervalMs);
    if (timed) this.schedule = { startAt, batches };
    for (let k = 0; k < batches && Date.now() < startAt + ms; k++) {
      await sleep(startAt + k * this.intervalMs - Date.now());
      await this.send(timed);
    }
  }

  /** Batches of the timed run due before `t`. */
  dueBefore(t: number): number {
    const { startAt, batches } = this.schedule;
    return t <= startAt ? 0 : Math.min(batches, Math.ceil((t - startAt) / this.intervalMs));
  }

  private async send(timed: boolean): Promise<void> {
    const sentAt = Date.now();
    let healthy = 0;
    const events = Array.from({ length: this.batch }, () => {
      const dest = this.nextEvent++ % this.ids.length;
      const kind = this.kinds[dest]!;
      const seq = timed && kind === "healthy" ? this.nextSeq++ : null;
      if (seq !== null) healthy++;
      return {
        type: timed ? "bench.mixed" : "bench.warmup",
        payload: seq === null ? { kind, dest, sent_at: sentAt } : { seq, dest, sent_at: sentAt },
        destination_ids: [this.ids[dest]!],
      };
    });
    if (timed) this.batchesSent++;
    // A refused batch is counted and the publisher goes on, as a producer would; a dead API ends the run.
    const res = await this.cluster.call("POST", "/v1/events/batch", { events }).catch((err: unknown) => {
      if (this.cluster.exited) throw err;
      return { status: 0, json: String(err) };
    });
    const answeredAt = Date.now();
    const ok = res.status === 202;
    const routed = ok ? (res.json as { events: { deliveries: number }[] }).events.reduce((n, e) => n + e.deliveries, 0) : 0;
    if (!ok) this.note(`a batch was answered ${res.status}: ${JSON.stringify(res.json).slice(0, 300)}`);
    else if (routed !== events.length) this.note(`a batch of ${events.length} events made ${routed} deliveries`);
    if (!timed) return;
    this.answers.push({ sentAt, answeredAt, events: events.length, ok });
    if (ok) this.healthyAccepted += healthy;
  }

  private note(s: string): void {
    if (this.notes.length < 5) this.notes.push(s);
  }
}

// ---- the store's locks -----------------------------------------------------------------------

const DEADLOCKS_SQL = "SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()";

async function deadlocks(db: pg.Client): Promise<number> {
  return (await db.query<{ n: number }>(DEADLOCKS_SQL)).rows[0]?.n ?? 0;
}

// A session waits for one lock at a time; waitstart is NULL for a moment after the wait begins.
const LOCK_WAITS_SQL = `
  SELECT count(DISTINCT a.pid)::int AS waiting,
         coalesce(max(extract(epoch FROM clock_timestamp() - l.waitstart)) * 1000, 0)::float8 AS longest_ms
    FROM pg_stat_activity a LEFT JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted
   WHERE a.datname = current_database() AND a.wait_event_type = 'Lock'`;

type LockSample = { at: number; waiting: number; longestMs: number };

/** LOCK_WAITS_SQL twice a second on a connection of its own. */
class LockWaits {
  readonly samples: LockSample[] = [];
  private running = true;
  private loop: Promise<void> = Promise.resolve();

  private constructor(private readonly db: pg.Client) {}

  static async begin(url: string): Promise<LockWaits> {
    const w = new LockWaits(await connect(url));
    w.loop = w.run();
    return w;
  }

  private async run(): Promise<void> {
    while (this.running) {
      const t = Date.now();
      const r = await this.db.query<{ waiting: number; longest_ms: number }>(LOCK_WAITS_SQL).catch(() => null); // a sample lost is no loss
      const row = r?.rows[0];
      if (row) this.samples.push({ at: t, waiting: row.waiting, longestMs: Number(row.longest_ms) });
      await sleep(LOCK_SAMPLE_MS - (Date.now() - t));
    }
  }

  /** Over [from, to): sessions waiting at the last sample and on average, and the longest wait seen (ms). */
  window(from: number, to: number): { now: number; avg: number; longestMs: number } {
    const s = this.samples.filter((x) => x.at >= from && x.at < to);
    return {
      now: s.at(-1)?.waiting ?? 0,
      avg: s.length ? s.reduce((n, x) => n + x.waiting, 0) / s.length : 0,
      longestMs: Math.max(0, ...s.map((x) => x.longestMs)),
    };
  }

  async end(): Promise<void> {
    this.running = false;
    await this.loop;
    await this.db.end().catch(() => undefined);
  }
}

// ---- the rows --------------------------------------------------------------------------------

type Row = {
  label: string;
  seconds: number;
  askedPerSec: number;
  publishedPerSec: number;
  behindEvents: number;
  refusedBatches: number;
  answerMs: Pct | null;
  healthyPerSec: number;
  latencyMs: Pct | null;
  deadlocks: number;
  lockWaiters: { now: number; avg: number; longestMs: number };
};

const ms = (n: number | undefined): string => (n === undefined ? "–" : fmt(n, n < 10 ? 1 : 0));
/** A span as m:ss. */
const clock = (spanMs: number): string => {
  const s = Math.round(spanMs / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
};

const COLUMNS: [string, (r: Row) => string][] = [
  ["at (m:ss)", (r) => r.label],
  ["asked/s", (r) => fmt(r.askedPerSec)],
  ["published/s", (r) => fmt(r.publishedPerSec)],
  ["behind", (r) => fmt(r.behindEvents)],
  ["refused", (r) => fmt(r.refusedBatches)],
  ["answer p50 ms", (r) => ms(r.answerMs?.p50)],
  ["answer p99 ms", (r) => ms(r.answerMs?.p99)],
  ["healthy/s", (r) => fmt(r.healthyPerSec)],
  ["p→r p50 ms", (r) => ms(r.latencyMs?.p50)],
  ["p→r p99 ms", (r) => ms(r.latencyMs?.p99)],
  ["deadlocks", (r) => fmt(r.deadlocks)],
  ["lock waiters now", (r) => fmt(r.lockWaiters.now)],
  ["avg", (r) => fmt(r.lockWaiters.avg, 1)],
  ["longest wait ms", (r) => ms(r.lockWaiters.longestMs)],
];
const WIDTHS = COLUMNS.map(([h], i) => Math.max(h.length, i === 0 ? 10 : 7));
const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(WIDTHS[i]!) : c.padStart(WIDTHS[i]!))).join("  ");

/** Takes the rows one window after another and prints each as it is taken. */
class Rows {
  readonly rows: Row[] = [];
  private from: number;
  private latencyFrom = 0;
  private deadlocksSeen: number;

  constructor(
    private readonly o: {
      publisher: Publisher;
      healthy: Receiver;
      db: pg.Client;
      locks: LockWaits;
      startAt: number;
      deadlocksAtStart: number;
      out: (s: string) => void;
    },
  ) {
    this.from = o.startAt;
    this.deadlocksSeen = o.deadlocksAtStart;
    o.out(line(COLUMNS.map(([h]) => h)));
  }

  /** The window (last row, `to`]; `drainFrom`: when publishing ended, for a row of the drain. */
  async take(to: number, drainFrom?: number): Promise<Row> {
    const { publisher: p, healthy, db, locks, startAt } = this.o;
    const seconds = Math.max(0.001, (to - this.from) / 1000);
    const answered = p.answers.filter((a) => a.answeredAt > this.from && a.answeredAt <= to);
    const { latencyMs, next } = await healthy.latencies(this.latencyFrom);
    this.latencyFrom = next;
    const dl = await deadlocks(db);
    const row: Row = {
      label: drainFrom === undefined ? clock(to - startAt) : `drain +${clock(to - drainFrom)}`,
      seconds,
      askedPerSec: ((p.dueBefore(to) - p.dueBefore(this.from)) * p.batch) / seconds,
      publishedPerSec: answered.reduce((n, a) => n + (a.ok ? a.events : 0), 0) / seconds,
      behindEvents: Math.max(0, p.dueBefore(to) - p.batchesSent) * p.batch,
      refusedBatches: answered.filter((a) => !a.ok).length,
      answerMs: percentiles(answered.map((a) => a.answeredAt - a.sentAt)),
      healthyPerSec: latencyMs.length / seconds,
      latencyMs: percentiles(latencyMs),
      deadlocks: dl - this.deadlocksSeen,
      lockWaiters: locks.window(this.from, to),
    };
    this.deadlocksSeen = dl;
    this.from = to;
    this.rows.push(row);
    this.o.out(line(COLUMNS.map(([, cell]) => cell(row))));
    return row;
  }
}

// ---- the run ---------------------------------------------------------------------------------

async function startSluice(cluster: SluiceCluster, workers: number): Promise<void> {
  if (workers === 0) return cluster.startApi("start");
  await cluster.startApi("api");
  await cluster.startWorkers(workers, true);
}

/** The timed run's deliveries by destination kind and status, and each kind's destinations paused at the end. */
async function endState(db: pg.Client): Promise<Record<string, Record<string, number>>> {
  const r = await db.query<{ kind: string; status: string; n: number }>(
    `SELECT split_part(d.name, '-', 1) AS kind, x.status, count(*)::int AS n
       FROM deliveries x JOIN destinations d ON d.id = x.destination_id JOIN events e ON e.id = x.event_id
      WHERE e.type = 'bench.mixed' GROUP BY 1, 2
     UNION ALL
     SELECT split_part(name, '-', 1), 'destinations paused', count(*) FILTER (WHERE paused_at IS NOT NULL)::int FROM destinations GROUP BY 1
     ORDER BY 1, 2`,
  );
  const out: Record<string, Record<string, number>> = {};
  for (const x of r.rows) (out[x.kind] ??= {})[x.status] = x.n;
  return out;
}

/** Publishes on the schedule while printing a row per window, then drains; everything the report needs. */
async function timedRun(o: {
  f: Flags;
  url: string;
  publisher: Publisher;
  healthy: Receiver;
  others: Receiver;
  cluster: SluiceCluster;
  db: pg.Client;
  postmaster: () => number | null;
  out: (s: string) => void;
}) {
  const { f, publisher, healthy, db } = o;
  const publishMs = f.minutes * 60_000;
  const sampleMs = f["sample-seconds"] * 1000;
  await healthy.reset(Math.ceil(publishMs / publisher.intervalMs) * publisher.batch);
  await o.others.reset(0);
  const locks = await LockWaits.begin(o.url);
  const cpu = new CpuSampler({ system: "sluice", pids: () => o.cluster.pids(), postmaster: o.postmaster, receiver: healthy.pid }).begin();
  const deadlocksAtStart = await deadlocks(db);
  const startAt = Date.now();
  const rows = new Rows({ publisher, healthy, db, locks, startAt, deadlocksAtStart, out: o.out });

  // Kept, not thrown, until a row is due: an unawaited rejection would end the process before the cleanup.
  const publishError: { error: Error | null } = { error: null };
  const publishing = publisher
    .run(startAt, publishMs, true)
    .catch((err: unknown) => void (publishError.error = err instanceof Error ? err : new Error(String(err))));
  for (let t = startAt + sampleMs; t < startAt + publishMs; t += sampleMs) {
    await sleep(t - Date.now());
    if (publishError.error) throw publishError.error;
    await rows.take(t);
  }
  await publishing;
  if (publishError.error) throw publishError.error;
  await sleep(startAt + publishMs - Date.now());
  const publishEndAt = Date.now(); // the last batch answered, or the time up
  await rows.take(publishEndAt);

  // The drain: until the healthy destinations got every event accepted for them, a row per window.
  const drainDeadline = publishEndAt + f["timeout-s"] * 1000;
  for (let windowEnd = publishEndAt + sampleMs; ; await sleep(200)) {
    const done = (await healthy.progress()).unique >= publisher.healthyAccepted;
    const now = Date.now();
    if (done || now >= drainDeadline || now >= windowEnd) {
      await rows.take(now, publishEndAt);
      windowEnd += sampleMs;
      if (done || now >= drainDeadline) break;
    }
  }
  const cpuUse = cpu.end();
  await locks.end();
  await sleep(1100); // a backend flushes its statistics (deadlocks among them) at most once a second
  const report = await healthy.report(publishEndAt);
  return {
    rows: rows.rows,
    startAt,
    publishEndAt,
    drainS: report.lastAt === null ? null : Math.max(0, report.lastAt - publishEndAt) / 1000,
    report,
    answers: publisher.answers,
    deadlocks: (await deadlocks(db)) - deadlocksAtStart,
    lockSamples: locks.samples,
    cpu: cpuUse,
  };
}

/** Lines of the Sluice logs that mention a deadlock. */
function deadlockLogLines(logFiles: string[]): number {
  return logFiles
    .filter((p) => existsSync(p))
    .reduce(
      (n, p) =>
        n +
        readFileSync(p, "utf8")
          .split("\n")
          .filter((l) => /deadlock/i.test(l)).length,
      0,
    );
}

// ---- the verdict -----------------------------------------------------------------------------

type Check = { what: string; ok: boolean; detail: string };

/** The claim, part by part, over every window of the run. */
function verdict(rows: Row[], o: { rate: number; intervalMs: number; healthySent: number; healthyReceived: number }): Check[] {
  const publishing = rows.filter((r) => r.askedPerSec > 0);
  const range = (xs: number[]): string => (xs.length ? `${ms(Math.min(...xs))}–${ms(Math.max(...xs))}` : "–");
  const answerP99 = publishing.map((r) => r.answerMs?.p99 ?? Infinity);
  const latencyP99 = rows.flatMap((r) => (r.latencyMs ? [r.latencyMs.p99] : []));
  return [
    {
      what: `every window published ≥ ${100 * RATE_SHARE} % of the asked rate`,
      ok: publishing.every((r) => r.publishedPerSec >= RATE_SHARE * r.askedPerSec),
      detail: `slowest window ${fmt(Math.min(...publishing.map((r) => r.publishedPerSec)))}/s of ${fmt(o.rate)}/s`,
    },
    {
      what: `answer time flat: every window's publish answer p99 within the ${fmt(o.intervalMs)} ms batch interval`,
      ok: answerP99.every((x) => x <= o.intervalMs),
      detail: `window p99s ${range(answerP99)} ms`,
    },
    {
      what: "the healthy destinations got everything they were sent",
      ok: o.healthySent > 0 && o.healthyReceived >= o.healthySent,
      detail: `${fmt(o.healthyReceived)} of ${fmt(o.healthySent)} received`,
    },
    {
      what: `every window's healthy publish→receive p99 under ${LATENCY_P99_LIMIT_MS} ms`,
      ok: publishing.every((r) => r.latencyMs !== null) && latencyP99.every((x) => x < LATENCY_P99_LIMIT_MS),
      detail: `window p99s ${range(latencyP99)} ms`,
    },
  ];
}

type RunOutcome = Awaited<ReturnType<typeof timedRun>> & {
  busyBefore: number;
  healthySent: number;
  batchesSent: number;
  publisherNotes: string[];
  endState: Record<string, Record<string, number>>;
  engineMetrics: Record<string, number> | null;
};

/** Prints the run's totals and the verdict; returns both for the results file. */
function summarise(out: (s: string) => void, run: RunOutcome, o: { f: Flags; intervalMs: number; logDeadlocks: number }) {
  const { report: rep, answers } = run;
  const asked = Math.round((o.f.minutes * 60_000) / o.intervalMs) * o.f.batch;
  const published = answers.reduce((n, a) => n + (a.ok ? a.events : 0), 0);
  const answerMs = percentiles(answers.map((a) => a.answeredAt - a.sentAt));
  const lat = rep.latencyMs;
  const waiting = run.lockSamples.map((x) => x.waiting);
  const lockWaiters = {
    avg: waiting.length ? waiting.reduce((a, b) => a + b, 0) / waiting.length : 0,
    max: Math.max(0, ...waiting),
    longestMs: Math.max(0, ...run.lockSamples.map((x) => x.longestMs)),
  };
  const complete = rep.unique >= run.healthySent;
  const drain = run.drainS === null ? "" : `, the last ${fmt(run.drainS, 1)} s after publishing ended`;
  const cpu = Object.entries(run.cpu).map(([k, v]) => `${k} ${v.pctOfOneCore}%`);
  out(`
totals over the ${o.f.minutes} min of publishing and the drain:`);
  out(
    `  published ${fmt(published)} of ${fmt(asked)} events asked (${fmt(run.batchesSent)} batches sent, ` +
      `${fmt(answers.filter((a) => !a.ok).length)} refused); publish answer p50 ${ms(answerMs?.p50)} / p99 ${ms(answerMs?.p99)} / max ${ms(answerMs?.max)} ms`,
  );
  out(
    `  healthy destinations: ${fmt(run.healthySent)} sent (in accepted batches), ${fmt(rep.unique)} received ${mark(complete)}${drain}; ` +
      `${fmt(rep.duplicates)} duplicates, ${fmt(rep.misrouted)} misrouted; publish→receive p50 ${ms(lat?.p50)} / p90 ${ms(lat?.p90)} / ` +
      `p99 ${ms(lat?.p99)} / max ${ms(lat?.max)} ms`,
  );
  out(
    `  store: ${fmt(run.deadlocks)} deadlocks (pg_stat_database); lock waiters ${fmt(lockWaiters.avg, 2)} on average, at most ${fmt(lockWaiters.max)} at once, ` +
      `longest wait seen ${ms(lockWaiters.longestMs)} ms; ${fmt(o.logDeadlocks)} lines of Sluice's logs mention a deadlock`,
  );
  out(`  the timed events' deliveries at the end, by destination kind:`);
  for (const [kind, byStatus] of Object.entries(run.endState))
    out(
      `    ${kind.padEnd(10)} ${Object.entries(byStatus)
        .map(([k, v]) => `${k} ${fmt(v)}`)
        .join(", ")}`,
    );
  out(`  CPU over the timed run (% of one core; the second receiver counts as "other processes"): ${cpu.join(", ")}`);
  if (run.engineMetrics)
    out(
      `  sluice's own metrics: ${Object.entries(run.engineMetrics)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")}`,
    );
  for (const note of run.publisherNotes) out(`  publisher: ${note}`);

  const checks = verdict(run.rows, { rate: o.f.rate, intervalMs: o.intervalMs, healthySent: run.healthySent, healthyReceived: rep.unique });
  const holds = checks.every((c) => c.ok);
  out(`
verdict against the claim "${CLAIM}":`);
  for (const c of checks) out(`  ${mark(c.ok)} ${c.what} (${c.detail})`);
  out(`  → the claim ${holds ? "HOLDS ✓" : "DOES NOT HOLD ✗"} over this run; ${fmt(run.deadlocks)} deadlocks in the store`);
  return {
    verdict: { holds, checks },
    totals: {
      askedEvents: asked,
      publishedEvents: published,
      batchesSent: run.batchesSent,
      refusedBatches: answers.filter((a) => !a.ok).length,
      publishAnswerMs: answerMs,
      healthySent: run.healthySent,
      healthyReceived: rep.unique,
      healthyDuplicates: rep.duplicates,
      healthyMisrouted: rep.misrouted,
      healthyLatencyMs: lat,
      drainS: run.drainS,
      deadlocks: run.deadlocks,
      lockWaiters,
      sluiceLogLinesMentioningDeadlock: o.logDeadlocks,
      machineBusyBeforePct: run.busyBefore,
    },
  };
}

// ---- main ------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const f = flags();
  if (f.batch > 1000) throw new Error("--batch takes at most 1,000 events (the API's limit)");
  const kinds = layout(f.destinations, f.mix);
  const intervalMs = (1000 * f.batch) / f.rate;
  const sluiceDir = resolve(f["sluice-dir"] ?? REPO);
  if (!existsSync(join(sluiceDir, "src", "cli", "main.ts"))) throw new Error(`--sluice-dir ${sluiceDir} has no src/cli/main.ts`);
  const bench = benchStart("mixed workload", sluiceDir);
  const { out } = bench;
  const n = (k: Kind): string => fmt(countOf(kinds, k));
  out(
    `workload: ${fmt(kinds.length)} destinations — ${n("healthy")} answer 200 at once, ${n("throttled")} answer 429 (Retry-After: ${f["retry-after"]}) ` +
      `to one request in ${f["throttle-one-in"]}, ${n("failing")} always answer 500, ${n("slow")} answer 200 after ${f["slow-ms"]} ms; ` +
      `${fmt(f.rate)} events/s asked as one batch of ${fmt(f.batch)} every ${fmt(intervalMs)} ms, one at a time, each event to one destination ` +
      `round robin, for ${f.minutes} min after ${f["warmup-s"]} s of warm-up; ` +
      (f.workers === 0 ? "one sluice start process" : `sluice api + ${f.workers} × sluice worker`) +
      `, destinations at Sluice's defaults`,
  );
  const pg = await bench.postgres(!f["no-fsync"], false, f["pg-icu-locale"]);
  const healthy = await Receiver.start(bench.log("mixed-receiver-healthy.log"));
  const others = await Receiver.start(bench.log("mixed-receiver-others.log"), {
    delayMs: f["slow-ms"],
    retryAfter: f["retry-after"],
    throttleOneIn: f["throttle-one-in"],
  });
  const logPrefix = bench.log("mixed");
  const logFiles = [f.workers === 0 ? "start" : "api", ...Array.from({ length: f.workers }, (_, i) => `worker${i}`)].map(
    (p) => `${logPrefix}-${p}.log`,
  );

  const run = await withDatabase(pg.server.url, "sluice_mixed", async (url) => {
    const cluster = new SluiceCluster({ databaseUrl: url, logPrefix, dir: sluiceDir });
    const db = await connect(url);
    try {
      await startSluice(cluster, f.workers);
      const ids = await cluster.createDestinations(kinds.length, (i) => ({
        url: destinationUrl(kinds[i]!, i, healthy, others),
        name: `${kinds[i]!}-${i}`,
      }));
      const publisher = new Publisher(cluster, ids, kinds, f.batch, intervalMs);
      if (f["warmup-s"] > 0) {
        process.stderr.write(`  warm-up: ${f["warmup-s"]} s of the same workload\n`);
        await publisher.run(Date.now(), f["warmup-s"] * 1000, false);
      }
      const busyBefore = await waitQuiet(f["wait-quiet-s"] * 1000);
      out(
        `machine ${busyBefore}% of one core busy before the timed run${busyBefore > 25 ? " — NOT quiet: figures will be disturbed" : ""}\n`,
      );
      const timed = await timedRun({ f, url, publisher, healthy, others, cluster, db, postmaster: pg.postmaster, out });
      return {
        ...timed,
        busyBefore,
        healthySent: publisher.healthyAccepted,
        batchesSent: publisher.batchesSent,
        publisherNotes: publisher.notes,
        endState: await endState(db),
        engineMetrics: await cluster.engineMetrics().catch(() => null),
      };
    } finally {
      await db.end().catch(() => undefined);
      await cluster.stop();
    }
  });
  await Promise.all([healthy.stop(), others.stop()]);
  const summary = summarise(out, run, { f, intervalMs, logDeadlocks: deadlockLogLines(logFiles) });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  bench.finish(`mixed-${stamp}`, {
    postgres: pg.settings,
    options: { ...f, sluiceDir, intervalMs, destinationsByKind: Object.fromEntries(KINDS.map((k) => [k, countOf(kinds, k)])) },
    claim: CLAIM,
    ...summary,
    rows: run.rows,
    endState: run.endState,
    cpu: run.cpu,
    engineMetrics: run.engineMetrics,
    publisherNotes: run.publisherNotes,
  });
}

runBench(main);
