// `npm run bench:latency`: idle publish → receive latency (issue 13, item 3). One event at a time,
// `POST /v1/events` to one destination (round-robin), then a pause after its answer, so nothing
// queues: what is left is the path itself. Two scenarios back to back: the server store (durable
// throwaway Postgres, `sluice api` + N × `sluice worker`, as `npm run bench`) and the embedded
// store (`sluice start` on a fresh PGlite directory). Times are sub-millisecond: the bench stamps
// sent_at with performance.timeOrigin + performance.now() just before each request, the receiver
// takes its time when the request's headers are parsed. On the server store the database says
// when each event's transaction started (events.created_at) and when the worker began the request
// (attempts.started_at), which splits the latency into stages. Every process's performance clock
// is put on the wall clock with its own measured offset (procs.ts wallClockOffsetMs) before any
// two stamps are compared. Prints tables; writes bench/results/latency-<time>.json.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Agent, request } from "undici";
import { connect, withDatabase } from "./pg.js";
import { clusterFlags, machineBusyPct, parseFlags, runBench, sleep, waitQuiet, wallClockOffsetMs } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, mark, table } from "./report.js";
import { SluiceCluster } from "./sluice.js";

const flags = () =>
  parseFlags("npm run bench:latency", {
    events: { def: 400, quick: 100, help: "measured events per scenario (after the warm-up)" },
    warmup: { def: 50, min: 0, help: "events published first and not counted" },
    destinations: { def: 10, help: "destinations, events round-robin over them" },
    "gap-ms": { def: 50, min: 0, help: "pause after each publish's answer before the next" },
    scenarios: { type: "str", arg: "LIST", def: "server,embedded", help: "any of server,embedded" },
    quick: { type: "bool", help: "small smoke run: 100 measured events per scenario" },
    ...clusterFlags(300),
  });
type Flags = ReturnType<typeof flags>;
type Kind = "server" | "embedded";

/** The issue's targets, publish → receive, in ms. */
const TARGETS: Record<Kind, { p50: number; p99: number }> = { server: { p50: 3, p99: 10 }, embedded: { p50: 5, p99: 15 } };

/** Unix ms with a fractional part, on this process's performance clock (what the receiver stamps with too). */
const preciseNow = (): number => performance.timeOrigin + performance.now();

/** One measured event: when it was sent and answered (bench), when it arrived (receiver); Unix ms on the wall clock. */
type Sample = { seq: number; dest: number; eventId: string; sentAt: number; answeredAt: number; arrivedAt: number | null };
type Percentiles = { n: number; p50: number; p90: number; p99: number; max: number } | null;

/** Nearest-rank percentiles (as the receiver computes them). */
function percentiles(values: number[]): Percentiles {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const at = (p: number): number => v[Math.min(v.length - 1, Math.floor((p / 100) * v.length))]!;
  return { n: v.length, p50: at(50), p90: at(90), p99: at(99), max: v[v.length - 1]! };
}

/** Stages of each event on the server store, from the database's timestamps (Unix ms). */
type Stamps = { eventId: string; createdAt: number; startedAt: number | null };
const STAGES = [
  ["client send → write starts (events.created_at)", (s: Sample, d: Stamps) => d.createdAt - s.sentAt],
  ["write start → 202 at the client", (s: Sample, d: Stamps) => s.answeredAt - d.createdAt],
  ["202 → attempt started_at (wake-up + claim)", (s: Sample, d: Stamps) => (d.startedAt === null ? NaN : d.startedAt - s.answeredAt)],
  [
    "started_at → receiver arrival",
    (s: Sample, d: Stamps) => (d.startedAt === null || s.arrivedAt === null ? NaN : s.arrivedAt - d.startedAt),
  ],
] as const;

/**
 * Each event's transaction start and its first attempt's start. The worker writes attempts back
 * after the answer, possibly batched: wait (up to 10 s) until every delivery has one.
 */
async function dbStamps(databaseUrl: string, eventIds: string[]): Promise<Stamps[]> {
  const db = await connect(databaseUrl);
  try {
    const query = () =>
      db.query<{ id: string; created_ms: number; started_ms: number | null }>(
        `SELECT e.id, extract(epoch FROM e.created_at)::float8 * 1000 AS created_ms,
                (SELECT extract(epoch FROM a.started_at)::float8 * 1000 FROM attempts a
                  WHERE a.destination_id = d.destination_id AND a.delivery_id = d.id ORDER BY a.attempt_no LIMIT 1) AS started_ms
           FROM events e JOIN deliveries d ON d.event_id = e.id
          WHERE e.id = ANY($1::text[])`,
        [eventIds],
      );
    let rows = (await query()).rows;
    for (const until = Date.now() + 10_000; rows.some((r) => r.started_ms === null) && Date.now() < until; await sleep(200))
      rows = (await query()).rows;
    return rows.map((r) => ({
      eventId: r.id,
      createdAt: Number(r.created_ms),
      startedAt: r.started_ms === null ? null : Number(r.started_ms),
    }));
  } finally {
    await db.end();
  }
}

/** `n` events, one at a time, `gapMs` apart after each answer; waits for them to arrive. `offsetMs`: the bench's wall-clock offset. */
async function publishOneByOne(
  cluster: SluiceCluster,
  rcv: Receiver,
  ids: string[],
  n: number,
  o: { gapMs: number; what: string; deadline: number; offsetMs: number },
): Promise<{ samples: Sample[]; receiverOffsetMs: number }> {
  await rcv.reset(n);
  process.stderr.write(`  ${o.what}: ${fmt(n)} events, one at a time, ${o.gapMs} ms apart\n`);
  const samples: Sample[] = [];
  for (let seq = 0; seq < n; seq++) {
    const dest = seq % ids.length;
    const sentAt = preciseNow();
    const body = { type: "bench.latency", payload: { seq, dest, sent_at: sentAt }, destination_ids: [ids[dest]!] };
    const res = await cluster.call("POST", "/v1/events", body);
    const answeredAt = preciseNow();
    const json = res.json as { id?: string; deliveries?: number } | null;
    if (res.status !== 202 || json?.deliveries !== 1 || !json.id)
      throw new Error(`POST /v1/events answered ${res.status}: ${JSON.stringify(res.json).slice(0, 300)}`);
    samples.push({ seq, dest, eventId: json.id, sentAt: sentAt + o.offsetMs, answeredAt: answeredAt + o.offsetMs, arrivedAt: null });
    if (o.gapMs > 0) await sleep(o.gapMs);
  }
  const p = await rcv.waitFor(
    (x) => x.unique >= n,
    o.deadline,
    (x) => `  ${o.what}: received ${fmt(x.unique)}/${fmt(n)}`,
    2000,
  );
  if (p.unique < n) process.stderr.write(`  ${o.what}: only ${p.unique} of ${n} arrived before the deadline\n`);
  const arrivals = await rcv.arrivalsBySeq();
  for (const s of samples) {
    const at = arrivals.at[s.seq];
    s.arrivedAt = at === null || at === undefined ? null : at + arrivals.wallClockOffsetMs;
  }
  return { samples, receiverOffsetMs: arrivals.wallClockOffsetMs };
}

/**
 * What one hop costs on this machine when both ends have been idle for `gapMs`, the situation of
 * every hop in the scenarios: an HTTP POST answered at once by the receiver (another process),
 * and `SELECT 1` on a Postgres connection. A publish → receive path of N such hops cannot beat
 * their sum, whatever Sluice does.
 */
async function idleHops(
  rcv: Receiver,
  databaseUrl: string | null,
  gapMs: number,
  n = 100,
): Promise<{ httpMs: Percentiles; pgMs: Percentiles }> {
  const agent = new Agent({ keepAliveTimeout: 60_000 });
  const times = async (hop: () => Promise<unknown>): Promise<Percentiles> => {
    const out: number[] = [];
    for (let i = 0; i < n + 5; i++) {
      await sleep(gapMs);
      const t = performance.now();
      await hop();
      if (i >= 5) out.push(performance.now() - t); // the first ones open the connection
    }
    return percentiles(out);
  };
  try {
    const httpMs = await times(async () => {
      const res = await request(rcv.url("/floor"), { method: "POST", body: "{}", dispatcher: agent });
      await res.body.text();
    });
    let pgMs: Percentiles = null;
    if (databaseUrl) {
      const db = await connect(databaseUrl);
      try {
        pgMs = await times(() => db.query("SELECT 1"));
      } finally {
        await db.end();
      }
    }
    return { httpMs, pgMs };
  } finally {
    await agent.close();
  }
}

type ScenarioResult = Awaited<ReturnType<typeof runScenario>>;

async function runScenario(kind: Kind, f: Flags, bench: ReturnType<typeof benchStart>, databaseUrl: string | null, offsetMs: number) {
  const busyBefore = f["wait-quiet-s"] > 0 ? await waitQuiet(f["wait-quiet-s"] * 1000) : await machineBusyPct(1000);
  const startedAt = Date.now();
  const deadline = startedAt + f["timeout-s"] * 1000;
  const label = kind === "server" ? `server store: sluice api + ${f.workers} × sluice worker` : "embedded store: sluice start (PGlite)";
  process.stderr.write(`\n▶ ${label} (machine ${busyBefore}% busy)\n`);
  const dataDir = kind === "embedded" ? mkdtempSync(join(tmpdir(), "sluice-latency-pglite-")) : undefined;
  const rcv = await Receiver.start(bench.log(`latency-${kind}-receiver.log`), { delayMs: 0 });
  const cluster = new SluiceCluster({ databaseUrl, dataDir, logPrefix: bench.log(`latency-${kind}`) });
  try {
    await cluster.startApi(kind === "server" ? "api" : "start");
    if (kind === "server") await cluster.startWorkers(f.workers, true);
    const ids = await cluster.createDestinations(f.destinations, (i) => ({ url: rcv.destUrl(i), name: `latency-${i}` }));
    const gapMs = f["gap-ms"];
    const floor = await idleHops(rcv, databaseUrl, gapMs);
    if (f.warmup > 0) await publishOneByOne(cluster, rcv, ids, f.warmup, { gapMs, what: "warm-up", deadline, offsetMs });
    const { samples, receiverOffsetMs } = await publishOneByOne(cluster, rcv, ids, f.events, {
      gapMs,
      what: "measured",
      deadline,
      offsetMs,
    });
    const rep = await rcv.report();
    const arrived = samples.filter((s) => s.arrivedAt !== null);
    const stamps = databaseUrl
      ? await dbStamps(
          databaseUrl,
          samples.map((s) => s.eventId),
        )
      : null;
    const byEvent = new Map(stamps?.map((d) => [d.eventId, d]));
    const stages = stamps
      ? STAGES.map(([name, of]) => ({
          name,
          ms: percentiles(samples.flatMap((s) => (byEvent.has(s.eventId) ? [of(s, byEvent.get(s.eventId)!)] : []))),
        }))
      : null;
    return {
      kind,
      label,
      busyBeforePct: busyBefore,
      /** One idle hop on this machine (see idleHops): the floor each hop of the path stands on. */
      idleHopMs: floor,
      events: f.events,
      received: arrived.length,
      duplicates: rep.duplicates,
      misrouted: rep.misrouted,
      publishToReceiveMs: percentiles(arrived.map((s) => s.arrivedAt! - s.sentAt)),
      publishRoundTripMs: percentiles(samples.map((s) => s.answeredAt - s.sentAt)),
      /** The receiver's own figure (its `at` on the wall clock − sent_at as sent, uncorrected for the bench's offset). */
      receiverLatencyMs: rep.latencyMs,
      /** Wall clock − performance clock of the bench and of the receiver. */
      clockOffsetsMs: { bench: offsetMs, receiver: receiverOffsetMs },
      stages,
      attemptsFound: stamps ? stamps.filter((d) => d.startedAt !== null).length : null,
      engineMetrics: await cluster.engineMetrics().catch(() => null),
      wallMs: Date.now() - startedAt,
      samples: samples.map((s) => {
        const d = byEvent.get(s.eventId);
        return { ...s, createdAt: d?.createdAt ?? null, attemptStartedAt: d?.startedAt ?? null };
      }),
    };
  } finally {
    await cluster.stop().catch(() => undefined);
    await rcv.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

const ms = (n: number | undefined): string => fmt(n, 2);

function describe(r: ScenarioResult): string {
  const t = TARGETS[r.kind];
  const l = r.publishToReceiveMs;
  const rtt = r.publishRoundTripMs;
  const target = (v: number | undefined, max: number): string => `${mark(v === undefined ? null : v <= max)} (≤ ${max})`;
  const lines = [
    `\n${r.label}: ${fmt(r.received)}/${fmt(r.events)} received, ${r.duplicates} duplicates, ${r.misrouted} misrouted; machine ${r.busyBeforePct}% busy before`,
    table([
      ["ms", "p50", "p90", "p99", "max", "target p50", "target p99"],
      ["publish → receive", ms(l?.p50), ms(l?.p90), ms(l?.p99), ms(l?.max), target(l?.p50, t.p50), target(l?.p99, t.p99)],
      ["publish request round trip (sent → 202)", ms(rtt?.p50), ms(rtt?.p90), ms(rtt?.p99), ms(rtt?.max), "", ""],
    ]),
  ];
  lines.push(
    `one idle hop on this machine (${fmt(r.idleHopMs.httpMs?.n)} each, after the same pause): HTTP POST answered at once p50 ${ms(r.idleHopMs.httpMs?.p50)} / p99 ${ms(r.idleHopMs.httpMs?.p99)} ms` +
      (r.idleHopMs.pgMs ? `; Postgres SELECT 1 p50 ${ms(r.idleHopMs.pgMs.p50)} / p99 ${ms(r.idleHopMs.pgMs.p99)} ms` : ""),
  );
  if (r.stages) {
    lines.push(
      `\nper event, from the database (events.created_at, attempts.started_at — started_at has 1 ms resolution; ` +
        `${r.attemptsFound}/${r.events} attempts found):`,
      table([["stage (ms)", "p50", "p99", "max"], ...r.stages.map((s) => [`  ${s.name}`, ms(s.ms?.p50), ms(s.ms?.p99), ms(s.ms?.max)])]),
    );
  }
  if (r.engineMetrics)
    lines.push(
      `sluice's own metrics: ${Object.entries(r.engineMetrics)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")}`,
    );
  return lines.join("\n");
}

async function main(): Promise<void> {
  const f = flags();
  const names = f.scenarios.split(",").flatMap((s) => (s.trim() ? [s.trim()] : []));
  for (const k of names) if (k !== "server" && k !== "embedded") throw new Error(`unknown scenario '${k}' (server, embedded)`);
  const kinds = names as Kind[];
  const fsync = !f["no-fsync"];
  const bench = benchStart("idle latency");
  const { out } = bench;
  const idleBusy = await machineBusyPct(2000);
  out(
    `machine load before starting: ${idleBusy}% of one core busy over 2 s${idleBusy > 25 ? " — NOT idle: figures will be disturbed" : " (quiet)"}`,
  );
  out(
    `workload: ${fmt(f.destinations)} destinations (receiver answers at once), ${fmt(f.warmup)} events to warm up then ${fmt(f.events)} measured, ` +
      `one POST /v1/events at a time to one destination round-robin, ${f["gap-ms"]} ms after each answer`,
  );
  // Measured once: the performance and wall clocks drift apart by far less than a microsecond per second.
  const offsetMs = wallClockOffsetMs();
  const results: ScenarioResult[] = [];
  const pgs = kinds.includes("server") ? await bench.postgres(fsync, false, f["pg-icu-locale"]) : null;
  for (const kind of kinds) {
    const r =
      kind === "server"
        ? await withDatabase(pgs!.server.url, "sluice_latency", (url) => runScenario(kind, f, bench, url, offsetMs))
        : await runScenario(kind, f, bench, null, offsetMs);
    results.push(r);
    out(describe(r));
  }
  const offsetAtEnd = wallClockOffsetMs();
  if (Math.abs(offsetAtEnd - offsetMs) > 0.1)
    out(
      `note: the wall clock moved ${fmt(offsetAtEnd - offsetMs, 2)} ms against the performance clock during the run: stages are off by up to that`,
    );

  const summary = [
    ["publish → receive (ms)", "p50", "p90", "p99", "max", "publish RTT p50", "publish RTT p99", "targets"],
    ...results.map((r) => {
      const l = r.publishToReceiveMs;
      const t = TARGETS[r.kind];
      const ok = (v: number | undefined, max: number): string => mark(v === undefined ? null : v <= max);
      return [
        r.kind === "server" ? `server (api + ${f.workers} workers, Postgres fsync ${fsync ? "on" : "off"})` : "embedded (PGlite)",
        ms(l?.p50),
        ms(l?.p90),
        ms(l?.p99),
        ms(l?.max),
        ms(r.publishRoundTripMs?.p50),
        ms(r.publishRoundTripMs?.p99),
        `p50 ${ok(l?.p50, t.p50)} ≤ ${t.p50}, p99 ${ok(l?.p99, t.p99)} ≤ ${t.p99}`,
      ];
    }),
  ];
  out(`\n${table(summary, true)}`);

  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  bench.finish(`latency-${stamp}`, {
    machineBusyBeforePct: idleBusy,
    postgres: pgs?.settings ?? null,
    fsync,
    benchClockOffsetMs: { atStart: offsetMs, atEnd: offsetAtEnd },
    options: {
      events: f.events,
      warmup: f.warmup,
      destinations: f.destinations,
      gapMs: f["gap-ms"],
      scenarios: kinds,
      workers: f.workers,
      quick: f.quick,
    },
    targets: TARGETS,
    results,
  });
}

runBench(main);
