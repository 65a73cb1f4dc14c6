// `npm run bench:mixed`: under a mixed workload on a Postgres server, does publishing keep its pace and do the healthy destinations keep
// their latency, window after window, for as long as it runs — or do publishing and the result write-back contend on destination rows?
// The workload (healthy, throttled, failing, slow and paused destinations; a publisher asked for a rate), its rows and verdict:
// docs/benchmarks.md. Figures are per window, so --minutes may be hours. `--backlog N` first queues N deliveries for each throttled
// destination (`npm run bench:isolation`); `--soak` (`bench:soak`) runs below capacity with a short retention, judged by soak.ts.
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { connect, withDatabase } from "./pg.js";
import { commonFlags, CpuSampler, parseFlags, percentiles, runBench, sleep, waitQuiet, type Percentiles } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, listFigures, mark } from "./report.js";
import { REPO, SluiceCluster } from "./sluice.js";
import { chart, flatness, sample, soakFigures, spanOf, type Sample, type SoakRow, type Spans } from "./soak.js";

// The soak: ~2/3 of what this workload reaches on a 2-core VM (~1,500 events/s); retention short, so the janitor works throughout.
const SOAK = process.argv.includes("--soak");
const flags = () =>
  parseFlags(`npm run bench:${SOAK ? "soak" : "mixed"}`, {
    destinations: { def: 100, min: 4, help: "destinations in all, split by --mix" },
    mix: { type: "str", arg: "H/T/F/S[/P]", def: SOAK ? "88/4/3/3/2" : "80/10/5/5", help: "healthy/throttled/failing/slow/paused shares" },
    rate: { def: SOAK ? 1000 : 1500, help: "events/s the publisher is asked for" },
    batch: { def: SOAK ? 100 : 150, help: "events per POST /v1/events/batch (≤ 1,000); one batch every batch ÷ rate s, one at a time" },
    minutes: { def: SOAK ? 30 : 10, quick: SOAK ? 2 : 1, help: "publishing time, minutes" },
    "retention-minutes": { def: SOAK ? 5 : 0, quick: SOAK ? 1 : 0, min: 0, help: "Sluice's retention, minutes (0 leaves Sluice's own)" },
    "sample-seconds": { def: 30, quick: 10, help: "one table row every N s" },
    "warmup-s": { def: 10, quick: 5, min: 0, help: "publish the same workload this long first, not measured" },
    "slow-ms": { def: 200, min: 0, help: "the slow destinations' answer delay, ms" },
    "retry-after": { arg: "S", def: 1, help: "the throttled destinations' Retry-After, seconds" },
    "throttle-one-in": { def: 5, help: "the throttled destinations answer 429 to one request in N, 200 at once to the others" },
    backlog: { def: 0, min: 0, help: "deliveries queued for each throttled destination before the warm-up" },
    ...commonFlags(120),
    workers: { def: 0, min: 0, help: "sluice worker processes beside one sluice api (default 0: one sluice start process)" },
    "timeout-s": { def: 120, help: "after publishing, wait up to N s for the healthy destinations to get everything (the drain)" },
    "sluice-dir": { type: "str", arg: "DIR", help: "run the Sluice of another checkout (with node_modules), e.g. a `git archive`" },
    quick: { type: "bool", help: `smoke run: ${SOAK ? "2 minutes, retention 1 minute" : "1 minute"}, a row every 10 s, 5 s of warm-up` },
    soak: { type: "bool", help: "npm run bench:soak: 30 minutes at 1,000 events/s, retention 5 minutes, flatness verdicts and a chart" },
    chart: { type: "str", arg: "FILE", help: "only write docs/images/soak.svg from a soak's results file" },
  });
type Flags = ReturnType<typeof flags>;
type Pids = () => [sluice: number[], postmaster: number | null];
const KINDS = ["healthy", "throttled", "failing", "slow", "paused"] as const;
type Kind = (typeof KINDS)[number];
const CLAIM =
  "publishing keeps the asked rate with its answer time flat, and the healthy destinations get everything they are sent " +
  "with publish→receive p99 under 200 ms, for the whole run";

/** Each destination's kind by index: `n` split by the --mix shares, in KINDS order (healthy takes the rounding). */
function layout(n: number, mix: string): Kind[] {
  const shares = [...mix.split("/").map(Number), 0].slice(0, KINDS.length);
  if (!/^\d+(\/\d+){3,4}$/.test(mix)) throw new Error(`--mix takes shares H/T/F/S[/P], e.g. 80/10/5/5, not '${mix}'`);
  const total = shares.reduce((a, b) => a + b, 0);
  const counts = shares.map((s) => Math.round((n * s) / total));
  counts[0] = n - counts.slice(1).reduce((a, b) => a + b, 0);
  if (counts[0] < 1) throw new Error(`--mix ${mix} leaves none of the ${n} destinations healthy`);
  return KINDS.flatMap((k, i) => Array<Kind>(counts[i]!).fill(k));
}

/** The publisher: healthy destinations' events carry a `seq`, which their receiver counts and times. Only the timed run is recorded. */
class Publisher {
  answers: { sentAt: number; answeredAt: number; events: number; ok: boolean }[] = []; // the timed run's, not yet in a row
  readonly notes: string[] = []; // the first refusals and surprises, verbatim
  readonly sent = { batches: 0, eventsAccepted: 0, healthyAccepted: 0 };
  private nextEvent = 0;
  private nextSeq = 0;
  private schedule = { startAt: 0, batches: 0 };

  constructor(readonly o: { cluster: SluiceCluster; ids: string[]; kinds: Kind[]; batch: number; intervalMs: number }) {}

  /** Publishes on the schedule from `startAt` for `ms`; `timed` false: a warm-up, not recorded. */
  async run(startAt: number, ms: number, timed: boolean): Promise<void> {
    const batches = Math.round(ms / this.o.intervalMs);
    if (timed) this.schedule = { startAt, batches };
    for (let k = 0; k < batches && Date.now() < startAt + ms; k++) {
      await sleep(startAt + k * this.o.intervalMs - Date.now());
      await this.send(timed);
    }
  }

  dueBefore(t: number): number {
    const { startAt, batches } = this.schedule;
    return t <= startAt ? 0 : Math.min(batches, Math.ceil((t - startAt) / this.o.intervalMs));
  }

  private async send(timed: boolean): Promise<void> {
    const sentAt = Date.now();
    let healthy = 0;
    const events = Array.from({ length: this.o.batch }, () => {
      const dest = this.nextEvent++ % this.o.ids.length;
      const kind = this.o.kinds[dest]!;
      const seq = timed && kind === "healthy" ? this.nextSeq++ : null;
      if (seq !== null) healthy++;
      const payload = seq === null ? { kind, dest, sent_at: sentAt } : { seq, dest, sent_at: sentAt };
      return { type: timed ? "bench.mixed" : "bench.warmup", payload, destination_ids: [this.o.ids[dest]!] };
    });
    // A refused batch is counted and the publisher goes on, as a producer would; a dead API ends the run.
    const res = await this.o.cluster.call("POST", "/v1/events/batch", { events }).catch((err: unknown) => {
      if (this.o.cluster.exited()) throw err;
      return { status: 0, json: String(err) };
    });
    const ok = res.status === 202;
    const routed = ok ? (res.json as { events: { deliveries: number }[] }).events.reduce((n, e) => n + e.deliveries, 0) : 0;
    const note = ok ? `${events.length} events made ${routed} deliveries` : `a batch answered ${res.status}: ${JSON.stringify(res.json)}`;
    if (this.notes.length < 5 && (!ok || routed !== events.length)) this.notes.push(note.slice(0, 300));
    if (!timed) return;
    this.answers.push({ sentAt, answeredAt: Date.now(), events: events.length, ok });
    this.sent.batches++;
    if (!ok) return;
    this.sent.eventsAccepted += events.length;
    this.sent.healthyAccepted += healthy;
  }
}

// A session waits for one lock at a time; waitstart is NULL for a moment after the wait begins.
// The janitor's REINDEX CONCURRENTLY is left out: between its phases it waits, on each older
// transaction's virtualxid lock, for the transactions that could still see the old index to end —
// a wait that holds up no one. (Sampled every 100 ms through a soak's first round of rebuilds,
// Sluice's own sessions never waited 100 ms for a lock; counted, the rebuild's waits could read as
// the 562–945 ms "longest wait" of the windows of earlier soaks' rebuilds.)
const STORE_SQL = `
  SELECT (SELECT deadlocks::int FROM pg_stat_database WHERE datname = current_database()) AS deadlocks,
         count(DISTINCT a.pid)::int AS waiting,
         coalesce(max(extract(epoch FROM clock_timestamp() - l.waitstart)) * 1000, 0)::float8 AS longest_ms
    FROM pg_stat_activity a LEFT JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted
   WHERE a.datname = current_database() AND a.wait_event_type = 'Lock' AND a.query NOT ILIKE 'REINDEX %'`;
type Figures = Record<"publishedPerSec" | "behind" | "refused" | "deadlocks", number> & {
  lockWaiters: Record<"now" | "avg" | "longestMs", number>;
};
type Row = SoakRow & Figures & { label: string; answerMs: Percentiles | null };

const ms = (n: number | undefined): string => (n === undefined ? "–" : fmt(n, n < 10 ? 1 : 0));
const COLUMNS: [string, (r: Row) => string][] = [
  ["at (m:ss)", (r) => r.label],
  ["asked/s", (r) => fmt(r.askedPerSec)],
  ["published/s", (r) => fmt(r.publishedPerSec)],
  ["behind", (r) => fmt(r.behind)],
  ["refused", (r) => fmt(r.refused)],
  ["answer p50 ms", (r) => ms(r.answerMs?.p50)],
  ["answer p99 ms", (r) => ms(r.answerMs?.p99)],
  ["healthy/s", (r) => fmt(r.healthyPerSec)],
  ["p→r p50 ms", (r) => ms(r.latencyMs?.p50)],
  ["p→r p99 ms", (r) => ms(r.latencyMs?.p99)],
  ["deadlocks", (r) => fmt(r.deadlocks)],
  ["lock waiters now", (r) => fmt(r.lockWaiters.now)],
  ["avg", (r) => fmt(r.lockWaiters.avg, 1)],
  ["longest wait ms", (r) => ms(r.lockWaiters.longestMs)],
  ["Sluice MB", (r) => fmt(r.soak.sluiceMB.reduce((a, b) => a + b, 0))],
  ["Postgres MB", (r) => fmt(r.soak.postgresMB)],
  ["tables MB", (r) => fmt(r.soak.tablesMB)],
  ["dead rows", (r) => fmt(r.soak.deadRows)],
  ["autovacuums", (r) => fmt(r.soak.autovacuums)],
  ["WAL kB/event", (r) => fmt(r.soak.walPerEventKB, 1)],
];
const WIDTHS = COLUMNS.map(([h], i) => Math.max(h.length, i === 0 ? 10 : 7));
const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(WIDTHS[i]!) : c.padStart(WIDTHS[i]!))).join("  ");

// Publishes on the schedule, then drains, sampling the store twice a second; a row at every window's end, at the end
// of publishing, then every window of the drain until the healthy destinations got all accepted for them (or --timeout-s).
async function timedRun(f: Flags, url: string, publisher: Publisher, healthy: Receiver, pids: Pids, out: (s: string) => void) {
  const db = await connect(url);
  const snapshot = () => sample(db, ...pids());
  let last: Sample = await snapshot();
  const spans: Spans = { early: [], late: [] };
  const store = async () => (await db.query<{ deadlocks: number; waiting: number; longest_ms: number }>(STORE_SQL)).rows[0]!;
  await healthy.reset();
  const startAt = Date.now();
  const [publishEnd, sampleMs] = [startAt + f.minutes * 60_000, f["sample-seconds"] * 1000];
  const drainDeadline = publishEnd + f["timeout-s"] * 1000;
  // Kept, not thrown, until the loop sees it: an unawaited rejection would end the process before the cleanup.
  const failed: { error?: Error } = {};
  const keep = (err: unknown): void => void (failed.error = err instanceof Error ? err : new Error(String(err)));
  const [publishing, deadlocksAtStart] = [publisher.run(startAt, publishEnd - startAt, true).catch(keep), (await store()).deadlocks];
  let publishedAt = publishEnd;
  const clock = (ms: number): string => `${Math.floor(ms / 60_000)}:${String(Math.round(ms / 1000) % 60).padStart(2, "0")}`;
  const rows: Row[] = [];
  out(line(COLUMNS.map(([h]) => h)));
  for (let from = startAt, drained = false; !drained;) {
    const drain = from >= publishEnd;
    const until = drain ? from + sampleMs : Math.min(from + sampleMs, publishEnd);
    const [deadlocksBefore, waits] = [(await store()).deadlocks, [] as { waiting: number; longest_ms: number }[]];
    while (Date.now() < until && !drained) {
      await sleep(Math.min(500, until - Date.now()));
      if (failed.error) throw failed.error;
      const locks = await store().catch(() => null); // a sample lost is no loss
      if (locks) waits.push(locks);
      if (drain) drained = (await healthy.progress()).unique >= publisher.sent.healthyAccepted || Date.now() > drainDeadline;
    }
    if (until === publishEnd) await publishing; // the last batch answered
    if (failed.error) throw failed.error;
    const to = Date.now();
    if (until === publishEnd) publishedAt = to;
    const answered = publisher.answers.filter((a) => a.answeredAt <= to);
    publisher.answers = publisher.answers.slice(answered.length);
    const { latencyMs } = await healthy.take();
    const [now, atMin, seconds] = [await snapshot(), (to - startAt) / 60_000, Math.max(0.001, (to - from) / 1000)];
    const span = drain ? null : spanOf(atMin, f.minutes);
    if (span) spans[span] = spans[span].concat(latencyMs);
    const published = answered.reduce((n, a) => n + (a.ok ? a.events : 0), 0);
    const averageWaiting = waits.reduce((n, x) => n + x.waiting, 0) / Math.max(1, waits.length);
    const row: Row = {
      label: drain ? `drain +${clock(to - publishEnd)}` : clock(to - startAt),
      atMin,
      seconds,
      askedPerSec: ((publisher.dueBefore(to) - publisher.dueBefore(from)) * publisher.o.batch) / seconds,
      publishedPerSec: published / seconds,
      behind: Math.max(0, publisher.dueBefore(to) - publisher.sent.batches) * publisher.o.batch,
      refused: answered.filter((a) => !a.ok).length,
      answerMs: percentiles(answered.map((a) => a.answeredAt - a.sentAt)),
      healthyPerSec: latencyMs.length / seconds,
      latencyMs: percentiles(latencyMs),
      deadlocks: (await store()).deadlocks - deadlocksBefore,
      lockWaiters: { now: waits.at(-1)?.waiting ?? 0, avg: averageWaiting, longestMs: Math.max(0, ...waits.map((x) => x.longest_ms)) },
      soak: soakFigures(now, last, published),
    };
    last = now;
    rows.push(row);
    out(line(COLUMNS.map(([, cell]) => cell(row))));
    from = to;
  }
  await sleep(1100); // a backend flushes its statistics (deadlocks among them) at most once a second
  const deadlocks = (await store()).deadlocks - deadlocksAtStart;
  // The timed run's deliveries by destination kind and status, and each kind's destinations paused at the end.
  const end = await db.query<{ kind: string; status: string; n: number }>(
    `SELECT split_part(d.name, '-', 1) AS kind, x.status, count(*)::int AS n
       FROM deliveries x JOIN destinations d ON d.id = x.destination_id JOIN events e ON e.id = x.event_id
      WHERE e.type = 'bench.mixed' GROUP BY 1, 2
     UNION ALL
     SELECT split_part(name, '-', 1), 'destinations paused', count(*) FILTER (WHERE paused_at IS NOT NULL)::int FROM destinations GROUP BY 1
     ORDER BY 1, 2`,
  );
  await db.end();
  const endState: Record<string, Record<string, number>> = {};
  for (const x of end.rows) (endState[x.kind] ??= {})[x.status] = x.n;
  const report = await healthy.report();
  const drainS = report.lastAt === null ? null : Math.max(0, report.lastAt - publishedAt) / 1000;
  return { rows, deadlocks, endState, report, drainS, spans };
}

async function main(): Promise<void> {
  const f = flags();
  if (f.chart) {
    writeFileSync(join(REPO, "docs/images/soak.svg"), chart(JSON.parse(readFileSync(f.chart, "utf8")) as Parameters<typeof chart>[0]));
    return void process.stdout.write("chart: docs/images/soak.svg\n");
  }
  if (f.batch > 1000) throw new Error("--batch takes at most 1,000 events (the API's limit)");
  const kinds = layout(f.destinations, f.mix);
  const count = (k: Kind): number => kinds.filter((x) => x === k).length;
  if (f.backlog > 0 && count("throttled") === 0) throw new Error("--backlog needs throttled destinations (--mix)");
  const [intervalMs, sluiceDir] = [(1000 * f.batch) / f.rate, resolve(f["sluice-dir"] ?? REPO)];
  const bench = benchStart(SOAK ? "soak (mixed workload)" : "mixed workload", sluiceDir);
  const { out } = bench;
  out(
    `workload: ${fmt(kinds.length)} destinations — ${count("healthy")} answer 200 at once, ${count("throttled")} answer 429 (Retry-After: ${f["retry-after"]}) ` +
      `to one request in ${f["throttle-one-in"]}${f.backlog ? ` with ${fmt(f.backlog)} deliveries queued each first` : ""}, ` +
      `${count("failing")} always answer 500, ${count("slow")} answer 200 after ${f["slow-ms"]} ms, ${count("paused")} paused; ` +
      `${fmt(f.rate)} events/s asked as one batch of ${fmt(f.batch)} every ${fmt(intervalMs)} ms, one at a time, each event to one destination ` +
      `round robin, for ${f.minutes} min after ${f["warmup-s"]} s of warm-up; ` +
      `${f.workers === 0 ? "one sluice start process" : `sluice api + ${f.workers} × sluice worker`}, destinations at Sluice's defaults, ` +
      `retention ${f["retention-minutes"] ? `${f["retention-minutes"]} min` : "Sluice's default"}`,
  );
  const pg = await bench.postgres(!f["no-fsync"], false, f["pg-icu-locale"]);
  const healthy = await Receiver.start(bench.log("mixed-receiver-healthy.log"));
  const config = { delayMs: f["slow-ms"], retryAfter: f["retry-after"], throttleOneIn: f["throttle-one-in"] };
  const others = await Receiver.start(bench.log("mixed-receiver-others.log"), config);

  const run = await withDatabase(pg.server.url, "sluice_mixed", async (url) => {
    const env = f["retention-minutes"] ? { SLUICE_RETENTION_HOURS: String(f["retention-minutes"] / 60) } : {};
    const cluster = new SluiceCluster({ databaseUrl: url, logPrefix: bench.log("mixed"), dir: sluiceDir, env });
    try {
      await cluster.start(f.workers);
      // The healthy destinations on their own paths of the healthy receiver; the others on the other receiver.
      const ids = await cluster.createDestinations(kinds.length, (i) => {
        const kind = kinds[i]!;
        const url = kind === "healthy" ? healthy.destUrl(i) : others.url(kind === "slow" ? `/d/slow-${i}` : `/${kind}`);
        return { url, name: `${kind}-${i}` };
      });
      for (const id of ids.filter((_, i) => kinds[i] === "paused")) await cluster.must(200, "POST", `/v1/destinations/${id}/pause`, {});
      const throttled = ids.filter((_, i) => kinds[i] === "throttled");
      if (f.backlog > 0) {
        process.stderr.write(`  backlog: ${fmt(f.backlog * throttled.length)} deliveries for the throttled destinations\n`);
        const event = (i: number) => ({ type: "bench.backlog", payload: { i }, destination_ids: [throttled[i % throttled.length]!] });
        await cluster.publishAll(f.backlog * throttled.length, event);
      }
      const publisher = new Publisher({ cluster, ids, kinds, batch: f.batch, intervalMs });
      process.stderr.write(`  warm-up: ${f["warmup-s"]} s of the same workload\n`);
      await publisher.run(Date.now(), f["warmup-s"] * 1000, false);
      const busyBefore = await waitQuiet(f["wait-quiet-s"] * 1000);
      const quiet = busyBefore > 25 ? " — NOT quiet: figures will be disturbed" : "";
      out(`machine ${busyBefore}% of one core busy before the timed run${quiet}\n`);
      const [pids, postmaster] = [() => cluster.pids(), pg.postmaster];
      const cpu = new CpuSampler({ system: "sluice", pids, postmaster, receiver: healthy.pid }).begin();
      const timed = await timedRun(f, url, publisher, healthy, () => [pids(), postmaster()], out);
      const figures = { cpu: cpu.end(), busyBefore, ...publisher.sent, notes: publisher.notes };
      return { ...timed, ...figures, engineMetrics: await cluster.engineMetrics() };
    } finally {
      await cluster.stop();
    }
  });
  const throttledRequests = (await others.progress()).throttled;
  await Promise.all([healthy.stop(), others.stop()]);

  // The totals, and the claim checked part by part over every window.
  const { rows, report: rep, spans, ...rest } = run;
  const publishing = rows.filter((r) => r.askedPerSec > 0);
  const worst = (xs: (number | undefined)[]): number => Math.max(0, ...xs.map((x) => x ?? Infinity));
  const answerP99 = worst(publishing.map((r) => r.answerMs?.p99));
  const latencyP99 = worst(rows.flatMap((r) => (r.latencyMs ? [r.latencyMs.p99] : r.askedPerSec > 0 ? [Infinity] : [])));
  const slowest = Math.min(...publishing.map((r) => r.publishedPerSec / r.askedPerSec));
  const { deadlocks, healthyAccepted: sent } = run;
  const checks = [
    [`every window published ≥ 95 % of the asked rate (slowest: ${fmt(100 * slowest)} %)`, slowest >= 0.95],
    [`every window's publish answer p99 within the ${fmt(intervalMs)} ms interval (worst: ${ms(answerP99)} ms)`, answerP99 <= intervalMs],
    [`the healthy destinations got all they were sent (${fmt(rep.unique)} of ${fmt(sent)})`, rep.unique >= sent],
    [`every window's healthy publish→receive p99 under 200 ms (worst: ${ms(latencyP99)} ms)`, latencyP99 < 200],
  ] as const;
  const holds = checks.every(([, ok]) => ok);
  const refused = rows.reduce((n, r) => n + r.refused, 0);
  out(`\ntotals: published ${fmt(run.eventsAccepted)} events in ${fmt(run.batches)} batches (${fmt(refused)} refused)`);
  out(`  healthy destinations: ${fmt(rep.unique)} received, ${fmt(rep.duplicates)} duplicates; drain ${fmt(run.drainS, 1)} s`);
  const [waiting, longest] = [worst(rows.map((r) => r.lockWaiters.now)), worst(rows.map((r) => r.lockWaiters.longestMs))];
  out(
    `  store: ${fmt(deadlocks)} deadlocks; at most ${fmt(waiting)} sessions waiting for a lock at a window's end, the longest wait ${ms(longest)} ms`,
  );
  out(`  the throttled destinations were answered ${fmt(throttledRequests)} 429s (the warm-up's and any backlog's included)`);
  out(`  the timed events' deliveries at the end, by destination kind:`);
  for (const [kind, by] of Object.entries(run.endState)) out(`    ${kind.padEnd(10)} ${listFigures(by)}`);
  out(`  CPU over the timed run (% of one core; the second receiver counts as "other processes"): ${listFigures(run.cpu)}`);
  if (run.engineMetrics) out(`  sluice's own metrics: ${listFigures(run.engineMetrics)}`);
  for (const note of run.notes) out(`  publisher: ${note}`);
  out(`\nverdict against the claim "${CLAIM}":`);
  for (const [what, ok] of checks) out(`  ${mark(ok)} ${what}`);
  out(`  → the claim ${holds ? "HOLDS ✓" : "DOES NOT HOLD ✗"} over this run; ${fmt(deadlocks)} deadlocks in the store`);
  const flat = flatness(rows, f.minutes, spans);
  if (SOAK) out(`\nflat over ${f.minutes} min?\n${flat.map(([what, ok]) => `  ${mark(ok)} ${what}`).join("\n")}`);
  const options = { ...f, sluiceDir, intervalMs, destinationsByKind: Object.fromEntries(KINDS.map((k) => [k, count(k)])) };
  const verdict = { holds, checks, flat };
  const results = { postgres: pg.settings, options, claim: CLAIM, verdict, throttledRequests, rows, report: rep, ...rest };
  bench.finish(SOAK ? "soak" : "mixed", results);
  if (SOAK) out("chart: npm run bench:soak -- --chart <that results file> writes docs/images/soak.svg");
}

runBench(main);
