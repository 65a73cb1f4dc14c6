// `npm run bench`: Sluice against two job queues (graphile-worker, pg-boss) on one throwaway Postgres server; Sluice alone through a
// transaction pooler, and with OpenTelemetry tracing on, each beside its direct figure; and Sluice embedded (PGlite). Asserts nothing;
// writes bench/results/delivery-<start>-<commit>.json. One run is the same for every system: a fresh receiver, the system set up against
// it, the events published in batches (each stamped with sent_at), then a wait for the last delivery. Fairness: every system runs
// compiled (Sluice from dist/, the peers' workers bundled by esbuild) in as many worker processes, and with the 50 ms receiver every
// system gets the same in-flight budget (--inflight-50ms), since there the budget, not the engine, would otherwise set the figure.
// --scenarios …,cell1,cell2 (never by default): Sluice alone in Citus cells, on a cluster started for them (a coordinator + 2 worker
// nodes, durable unless --no-fsync): cell1 one cell; cell2 two, one per node, each with half the destinations and its own `sluice api` +
// workers (--workers shared out). Then µs of CPU per delivery: Sluice, Postgres (all nodes, the coordinator, each node), beside 0ms.
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { runMigrations } from "graphile-worker";
import { PgBoss } from "pg-boss";
import { ensureCitus, startCitusCluster, type CitusCluster } from "../scripts/citus.mjs";
import { findPgBouncer } from "../scripts/ensure-deps.mjs";
import { startPgBouncer, throughPooler } from "../scripts/pgbouncer.mjs";
import { createCell } from "../src/db/cells.js";
import { cellNodes } from "../src/db/queries/cell-directory.js";
import { peerDelivery } from "./peers.js";
import { adminQuery, connect, withDatabase } from "./pg.js";
import { cleanup, commonFlags, CpuSampler, forkReady, listFlag, onCleanup, parseFlags, runBench, stopChild, waitQuiet } from "./procs.js";
import { sleep, type Servers } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, cellTable, comparisonTable, DEFAULT_SCENARIOS, describeRun, fmt, newRun, SCENARIOS, SYSTEMS } from "./report.js";
import { TARGETS_TEXT, type RunResult } from "./report.js";
import { REPO, SluiceCluster } from "./sluice.js";

/** Event `seq` goes to destination `dest` (round-robin), its batch handed over at `sentAt` (Unix ms). */
type BenchEvent = { seq: number; dest: number; sentAt: number };
type SystemUnderTest = {
  pids(): number[]; // Process trees whose CPU counts as the system's own.
  publishBatch(batch: BenchEvent[]): Promise<void>;
  engineMetrics?(): Promise<Record<string, number> | null>;
  stop(): Promise<void>;
  inflight: number; // The most requests it may have in flight at once, across its processes: its settings' product.
  settings: RunResult["settings"];
};
type Setup = (rcv: Receiver) => Promise<SystemUnderTest>;

const BATCH = 1000; // events per publish: Sluice's batch limit, and one add_jobs / insert() for the peers
const CAP = 5; // every destination's max_concurrency (Sluice's default), and pg-boss's groupConcurrency
/** Sluice settings read from the environment; recorded with the results. */
const KNOBS = ["SLUICE_CLAIM_BATCH", "SLUICE_GRANT_CAP", "SLUICE_DB_POOL_SIZE", "SLUICE_MAX_SOCKETS_PER_ORIGIN"] as const;
const NODE_SETTINGS =
  "SELECT string_agg(name || '=' || current_setting(name), ', ') AS s FROM unnest('{fsync,synchronous_commit,wal_level}'::text[]) AS name";
/** In flight per process at 0 ms, where each system runs as tuned (docs/benchmarks.md, Method); pg-boss's is local × batch. */
const TUNED = { sluice: Number(process.env.SLUICE_WORKER_CONCURRENCY ?? 512), graphile: 50, pgbossLocal: 5, pgbossBatch: 10 };

type RunOptions = Record<"destinations" | "workers" | "concurrency", number> & { log: string };
type PeerOptions = RunOptions & { databaseUrl: string; module: string };
type SluiceOptions = RunOptions & { databaseUrl: string | null; directUrl?: string; dataDir?: string; traced?: boolean; dir: string };
// `sluice api` + N × `sluice worker` on a server (`databaseUrl` pooled, with `directUrl` for LISTEN), or `sluice start` embedded;
// `traced`: every span exported to the receiver's OTLP sink. `cells`: one such cluster per cell (SLUICE_CELLS, its own API key: its
// default tenant is in its cell), the N workers shared out, destination i in cell i mod cells, its events published there.
async function setupSluice(rcv: Receiver, o: SluiceOptions & { cells?: string[]; store?: string }): Promise<SystemUnderTest> {
  const [cells, k] = [o.cells ?? [undefined], o.cells?.length ?? 1];
  const share = cells.map((_, c) => (o.databaseUrl === null ? 0 : Math.max(1, Math.floor((o.workers + k - 1 - c) / k))));
  const procs = share.reduce((a, b) => a + b) || 1;
  // Traced: every publish starts a sampled trace (no incoming traceparent, the default sampler), the worst case.
  const otel = o.traced ? { OTEL_EXPORTER_OTLP_ENDPOINT: rcv.url(""), OTEL_SERVICE_NAME: "sluice-bench" } : {};
  const env = { SLUICE_WORKER_CONCURRENCY: String(o.concurrency), SLUICE_DIRECT_DATABASE_URL: o.directUrl, ...otel };
  const clusters = cells.map(
    (cell) => new SluiceCluster({ ...o, logPrefix: cell ? `${o.log}-${cell}` : o.log, env: { ...env, SLUICE_CELLS: cell } }),
  );
  const sockets = Number(process.env.SLUICE_MAX_SOCKETS_PER_ORIGIN ?? o.concurrency); // unset: the worker's concurrency
  const inflight = Math.min(procs * o.concurrency, procs * sockets, o.destinations * CAP);
  const ids: string[] = [];
  const stop = async (): Promise<void> => void (await Promise.all(clusters.map((cl) => cl.stop())));
  try {
    for (const [c, cluster] of clusters.entries()) {
      await cluster.start(share[c]!);
      const body = (j: number) => ({ url: rcv.destUrl(j * k + c), name: `bench-${j * k + c}` });
      (await cluster.createDestinations(Math.ceil((o.destinations - c) / k), body)).forEach((id, j) => (ids[j * k + c] = id));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const toEvent = (e: BenchEvent) => ({
    type: "bench.event",
    payload: { seq: e.seq, dest: e.dest, sent_at: e.sentAt },
    destination_ids: [ids[e.dest]!],
  });
  const api = (n: number, c: number): string => `sluice api + ${n} × sluice worker${o.cells ? ` (SLUICE_CELLS=${o.cells[c]})` : ""}`;
  const split = k > 1 ? `: ${procs} worker processes in all (cell1: ${o.workers}); a batch split by cell, its parts sent at once` : "";
  return {
    inflight,
    settings: {
      process: o.databaseUrl === null ? "sluice start (API + worker, one process)" : share.map(api).join(" and ") + split,
      store:
        o.store ??
        (o.databaseUrl === null ? "embedded PGlite" : o.directUrl ? "postgres server through PgBouncer; LISTEN direct" : "postgres server"),
      ...(o.traced ? { tracing: "OTLP/HTTP JSON to the receiver's /v1/traces, every trace sampled" } : {}),
      in_flight: `min(${procs} × SLUICE_WORKER_CONCURRENCY ${o.concurrency}, ${procs} × ${sockets} sockets, destinations × ${CAP}) = ${inflight}`,
      sluice_dir: o.dir,
      ...Object.fromEntries(KNOBS.map((k) => [k, process.env[k] ?? "default"])),
    },
    pids: () => clusters.flatMap((cl) => cl.pids()),
    engineMetrics: () => clusters[0]!.engineMetrics(clusters.slice(1)),
    stop,
    publishBatch: async (batch) => {
      const parts = clusters.map((_, c) => batch.filter((e) => e.dest % k === c).map(toEvent));
      await Promise.all(parts.flatMap((part, c) => (part.length > 0 ? [clusters[c]!.publishBatch(part)] : [])));
    },
  };
}

const MOVE = "SELECT citus_schema_move($1, '127.0.0.1', $2, 'force_logical')";
// New cells `names`, one per worker node: Citus places a new cell where it likes, so one on a node an earlier cell took is moved
// (citus_schema_move) and its placement read again. `f` gets where they are and, for the CPU sampler, the cluster's postmasters,
// each worker node named by the cells it holds (a, b: in `names`' order). The cells are dropped after (the directory keeps them).
async function withCells<T>(citus: CitusCluster, names: string[], f: (where: string, servers: Servers) => Promise<T>): Promise<T> {
  const sql = <R>(q: string, params?: unknown[]): Promise<R[]> => adminQuery<R>(citus.coordinatorUrl, q, params);
  try {
    for (const url of [citus.coordinatorUrl, ...citus.workerUrls]) await adminQuery(url, "CHECKPOINT");
    const at: string[] = [];
    for (const name of names) {
      const free = citus.workerPorts.find((port) => !at.includes(`127.0.0.1:${port}`)); // there is one: a cell per worker at most
      if (at.includes((await createCell(citus.coordinatorUrl, name)).node!)) await sql(MOVE, [name, free]);
      at.push((await cellNodes({ query: sql, exec: async () => undefined }, [name])).get(name)!);
    }
    if (new Set(at).size < names.length) throw new Error(`cells ${names.join(", ")} share a node: ${at.join(", ")}`);
    const cellsOn = (port: number): string => at.flatMap((n, c) => (n === `127.0.0.1:${port}` ? [`cell ${"ab"[c]}`] : [])).join(" + ");
    const labels = ["postgres coordinator", ...citus.workerPorts.map((port) => `postgres worker (${cellsOn(port) || "no cell"})`)];
    const nodes = (): Record<string, number | null> => Object.fromEntries(citus.postmasterPids().map((pid, i) => [labels[i]!, pid]));
    return await f(names.map((n, i) => `cell ${n} on ${at[i]}`).join(", "), { nodes });
  } finally {
    await sql(`DROP SCHEMA IF EXISTS ${names.join(", ")} CASCADE`).catch(() => undefined);
  }
}

// graphile_worker.add_jobs with the JSON array turned into job_spec rows: one statement per batch,
// as Sluice takes one request per batch; unset fields take its defaults (no queue, run now, 25 attempts).
const ADD_JOBS = `
  SELECT count(*)::int AS n FROM graphile_worker.add_jobs(
    (SELECT array_agg(s) FROM json_populate_recordset(null::graphile_worker.job_spec, $1::json) AS s))`;

// A peer in its own database, one job per delivery, run by `workers` processes of the compiled peers.ts: graphile-worker 0.16.6
// (`concurrency` jobs at once per process, no flow control), or pg-boss 12.38 (one queue, jobs grouped by destination,
// `groupConcurrency` its max_concurrency, `concurrency` fetch loops of a batch each per process). The bench publishes
// through each one's own batch call: graphile_worker.add_jobs, pg-boss's insert().
async function setupPeer(system: "graphile-worker" | "pg-boss", rcv: Receiver, o: PeerOptions): Promise<SystemUnderTest> {
  const graphile = system === "graphile-worker";
  const [queue, batchSize] = ["webhooks", graphile ? 1 : TUNED.pgbossBatch];
  // A connection per job (graphile-worker) or fetch loop (pg-boss), one for LISTEN (pg-boss: and one to spare), within the
  // server's max_connections of 300.
  const pool = Math.min(o.concurrency + (graphile ? 1 : 2), Math.floor(290 / o.workers));
  const job = (e: BenchEvent) => peerDelivery(rcv.destUrl(e.dest), e, `evt_${randomUUID()}`);
  let publish: (batch: BenchEvent[]) => Promise<unknown>;
  let close: () => Promise<unknown>;
  if (graphile) {
    await runMigrations({ connectionString: o.databaseUrl, logger: undefined });
    const db = await connect(o.databaseUrl);
    publish = (batch) => db.query(ADD_JOBS, [JSON.stringify(batch.map((e) => ({ identifier: "deliver", payload: job(e) })))]);
    close = () => db.end();
  } else {
    // The publisher installs the schema and creates the queue, so the workers start on a ready database.
    const boss = new PgBoss({ connectionString: o.databaseUrl, max: 4, supervise: false, schedule: false });
    boss.on("error", (err) => process.stderr.write(`pg-boss publisher error: ${err.message}\n`));
    await boss.start();
    // 25 attempts as graphile-worker's default; NOTIFY so idle workers wake when jobs arrive.
    await boss.createQueue(queue, { retryLimit: 24, notify: true });
    const insert = (e: BenchEvent) => ({ data: job(e), group: { id: String(e.dest) } });
    publish = (batch) => boss.insert(queue, batch.map(insert));
    close = () => boss.stop({ graceful: false, timeout: 5000 });
  }
  const argv = graphile ? [o.concurrency, pool] : [queue, CAP, o.concurrency, batchSize, pool];
  const args = [graphile ? "graphile" : "pgboss", o.databaseUrl, ...argv].map(String);
  const workers: Awaited<ReturnType<typeof forkReady>>["child"][] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(workers.map((w) => stopChild(w, 15_000)));
    await close().catch(() => undefined);
  };
  try {
    for (let i = 0; i < o.workers; i++) workers.push((await forkReady(o.module, args, `${o.log}-worker${i}.log`, 60_000)).child);
  } catch (err) {
    await stop();
    throw err;
  }
  const sizes = graphile ? { concurrency: o.concurrency } : { localConcurrency: o.concurrency, batchSize, groupConcurrency: CAP };
  return {
    inflight: o.workers * o.concurrency * batchSize,
    settings: { version: graphile ? "graphile-worker 0.16.6" : "pg-boss 12.38", processes: o.workers, ...sizes, pool },
    pids: () => workers.flatMap((w) => (w.pid === undefined ? [] : [w.pid])),
    publishBatch: async (batch) => void (await publish(batch)),
    stop,
  };
}

/** `p`, unless the deadline comes first (a hung system must not hang the bench). */
const beforeDeadline = <T>(p: Promise<T>, deadline: number, what: string): Promise<T> =>
  Promise.race([p, sleep(deadline - Date.now()).then(() => Promise.reject(new Error(`${what} did not finish before the run's deadline`)))]);

/** One measured run: `result` filled in from what the receiver saw, the CPU and the system's own metrics. */
async function measure(result: RunResult, f: Flags, o: { log: string; servers: Servers; setup: Setup }): Promise<RunResult> {
  const { system, scenario, events, destinations, receiverDelayMs } = result;
  const [label, busy] = [`${system} ${scenario}`, await waitQuiet(f["wait-quiet-s"] * 1000)];
  if (busy > 25) result.notes.push(`started although the machine was ${busy}% busy with other processes`);
  process.stderr.write(`\n▶ ${label}: ${fmt(destinations)} destinations, ${fmt(events)} events, receiver delay ${receiverDelayMs} ms\n`);
  const startedAt = Date.now();
  const deadline = startedAt + f["timeout-s"] * 1000;
  const rcv = await Receiver.start(`${o.log}-receiver.log`, { delayMs: receiverDelayMs, cap: result.perDestinationCap ?? 0 });
  let [sut, sampler]: [SystemUnderTest | null, CpuSampler | null] = [null, null];
  let [publishStartAt, published, done] = [0, 0, false];
  let waiting: Promise<unknown> = Promise.resolve();
  try {
    await rcv.reset(events);
    const sys = (sut = await beforeDeadline(o.setup(rcv), deadline, "setting up"));
    Object.assign(result, { settings: sys.settings, inflight: sys.inflight });
    const cpu = { system, pids: () => sys.pids(), ...o.servers, receiver: rcv.pid, bench: "bench (publisher)" };
    sampler = new CpuSampler({ ...cpu, pooler: scenario === "pooled" }).begin();
    publishStartAt = Date.now();
    const more = (p: { at: number }): string => `, published ${fmt(published)}, t=${fmt((p.at - publishStartAt) / 1000)} s`;
    const arrived = rcv.waitFor(events, deadline, label, more, () => done);
    waiting = arrived.catch(() => undefined);
    for (let seq = 0; seq < events; seq += BATCH) {
      const sentAt = Date.now();
      const batch: BenchEvent[] = [];
      for (let n = seq; n < Math.min(events, seq + BATCH); n++) batch.push({ seq: n, dest: n % destinations, sentAt });
      await beforeDeadline(sys.publishBatch(batch), deadline, `publishing event ${fmt(seq)} on`);
      published += batch.length;
    }
    const ms = Date.now() - publishStartAt;
    result.publish = { ms, eventsPerSec: published / (ms / 1000 || 1) };
    const p = await arrived;
    result.status = p.unique >= events ? "complete" : "timeout";
    if (p.unique < events) result.notes.push(`stopped at the ${f["timeout-s"]} s deadline with ${fmt(p.unique)}/${fmt(events)} received`);
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
    process.stderr.write(`  ✗ ${label} failed: ${result.error}\n`);
  } finally {
    done = true;
    await waiting;
    if (sampler) result.cpu = sampler.end();
    const other = result.cpu["(other processes, kernel)"]?.pctOfOneCore ?? 0;
    if (other > 25) result.notes.push(`${other}% of one core went to processes outside this run (or the kernel): figures disturbed`);
    if (publishStartAt > 0) {
      await new Promise((r) => setTimeout(r, 500)); // let a duplicate that is on its way arrive before we count
      const x = (result.receiver = await rcv.report().catch(() => null));
      const measuredMs = (x?.lastAt ?? 0) - publishStartAt;
      result.deliveriesPerSec = x && measuredMs > 0 ? x.unique / (measuredMs / 1000) : null;
    }
    result.engineMetrics = (await sut?.engineMetrics?.().catch(() => null)) ?? null;
    await sut?.stop().catch((err: unknown) => result.notes.push(`stop failed: ${(err as Error).message}`));
    await rcv.stop();
    result.wallMs = Date.now() - startedAt;
  }
  return result;
}

const flags = () =>
  parseFlags("npm run bench", {
    events: { def: 100_000, quick: 5000, help: "events per server scenario (embedded: at most 20,000)" },
    destinations: { def: 1000, quick: 100, help: "destinations (embedded: at most 100)" },
    scenarios: { type: "str", arg: "LIST", def: DEFAULT_SCENARIOS.join(","), help: "scenarios to run, comma-separated; also cell1,cell2" },
    systems: { type: "str", arg: "LIST", def: SYSTEMS.join(","), help: "systems to run, comma-separated" },
    repeat: { def: 1, help: "runs of each system in each scenario, interleaved; the table gives the median and the spread" },
    "inflight-50ms": { def: 200, min: 0, help: "50 ms: requests each system may have in flight, across its processes (0 = as at 0 ms)" },
    "pooler-pool-size": { def: 0, min: 0, help: "pooled: PgBouncer's default_pool_size (default 0: (workers + 1) × SLUICE_DB_POOL_SIZE)" },
    "sluice-dir": { type: "str", arg: "DIR", help: "run the Sluice of another checkout (with node_modules) instead of this one" },
    ...commonFlags(600),
    workers: { def: 2, help: "worker processes of each system: sluice api + N × sluice worker, N of each peer's" },
    quick: { type: "bool", help: "small smoke run: 100 destinations, 5,000 events" },
  });
type Flags = ReturnType<typeof flags>;
async function main(): Promise<void> {
  const f = flags();
  const { events, destinations, workers } = f;
  const [scenarios, systems] = [listFlag("scenarios", f.scenarios, SCENARIOS), listFlag("systems", f.systems, SYSTEMS)];
  const dir = resolve(f["sluice-dir"] ?? REPO);
  if (!existsSync(join(dir, "src", "cli", "main.ts"))) throw new Error(`--sluice-dir ${dir} has no src/cli/main.ts`);
  const bench = benchStart("delivery", dir);
  const { out } = bench;
  const server = scenarios.filter((s) => s !== "embedded" && (systems.includes("sluice") || !s.startsWith("cell")));
  const plain = server.filter((s) => !s.startsWith("cell"));
  // The peers' workers bundled by esbuild (packages left as imports) to run without a loader, as Sluice's dist/ does; under
  // bench/results/ (ignored by git), so that those imports resolve from this checkout's node_modules.
  const peers = join(REPO, "bench", "results", ".peers", "peers.mjs");
  const entryPoints = [fileURLToPath(new URL("./peers.ts", import.meta.url))];
  const esm = { bundle: true, packages: "external", platform: "node", format: "esm", target: "node20", logLevel: "warning" } as const;
  if (plain.length > 0 && systems.some((s) => s !== "sluice")) await build({ entryPoints, outfile: peers, ...esm });
  const pgs = plain.length > 0 ? await bench.postgres(!f["no-fsync"], false, f["pg-icu-locale"]) : null;
  // As many server connections as Sluice's pools hold clients, by default: no transaction waits for
  // one it would have had direct, so the pooled run costs the pooler's hop and the unnamed statements.
  const poolSize = f["pooler-pool-size"] || (workers + 1) * Number(process.env.SLUICE_DB_POOL_SIZE ?? 10);
  const pooler = pgs && plain.includes("pooled") && systems.includes("sluice") ? await startPgBouncer(pgs.server.url, { poolSize }) : null;
  if (pooler) onCleanup(() => pooler.stop());
  const version = pooler ? spawnSync(findPgBouncer()!, ["--version"], { encoding: "utf8" }).stdout.split("\n")[0] : null;
  if (pooler) out(`pooled: ${version} in front of it, pool_mode transaction, default_pool_size ${poolSize}`);
  if (server.length > plain.length) ensureCitus(); // builds it from the vendored source when it is not installed (as root)
  const citus = server.length > plain.length ? await startCitusCluster({ workers: 2, fsync: !f["no-fsync"], log: () => undefined }) : null;
  if (citus) onCleanup(() => citus.stop());
  const citusSettings = citus && (await adminQuery<{ s: string }>(citus.coordinatorUrl, NODE_SETTINGS))[0]!.s;
  if (citus) out(`cells: Citus ${citus.citusVersion} on PostgreSQL ${citus.postgresVersion}, coordinator + 2 workers: ${citusSettings}`);
  out(
    `workload: ${fmt(destinations)} destinations, ${fmt(events)} events in batches of ${fmt(BATCH)}, one at a time, each to one destination ` +
      `round-robin; ${workers} worker processes per system; per-run timeout ${f["timeout-s"]} s; ${f.repeat} run(s) of each`,
  );

  const runs: RunResult[] = [];
  const run = async (result: RunResult, log: string, setup: Setup, servers: Servers = { postmaster: pgs?.postmaster ?? (() => null) }) => {
    runs.push(await measure(result, f, { log: bench.log(log), servers, setup }));
    out(`\n${describeRun(runs.at(-1)!)}`);
  };
  for (let rep = 1; rep <= f.repeat; rep++) {
    for (const scenario of server) {
      // At 0 ms the engine, not the budget, sets the figure, and each runs as tuned for it; at 50
      // ms each gets the same total budget, split evenly over its processes.
      const budget = scenario === "50ms" ? f["inflight-50ms"] : 0;
      const share = (per = 1): number => Math.max(1, Math.floor(budget / workers / per));
      for (const system of systems.filter((s) => scenario === "0ms" || scenario === "50ms" || s === "sluice")) {
        const log = `${system}-${scenario}${f.repeat > 1 ? `-${rep}` : ""}`;
        const cap = system === "graphile-worker" ? null : CAP; // graphile-worker has no per-destination limit
        const result = newRun({ system, scenario, destinations, events, receiverDelayMs: budget ? 50 : 0, perDestinationCap: cap });
        const tuned = system === "sluice" ? TUNED.sluice : system === "graphile-worker" ? TUNED.graphile : TUNED.pgbossLocal;
        const concurrency = budget ? share(system === "pg-boss" ? TUNED.pgbossBatch : 1) : tuned;
        const sizes = { destinations, workers, concurrency, log: bench.log(log) };
        if (scenario === "cell1" || scenario === "cell2") {
          const names = ["a", "b"].slice(0, scenario === "cell1" ? 1 : 2).map((x) => `${scenario}${x}_${rep}`);
          const cells = { cells: names, databaseUrl: citus!.coordinatorUrl };
          await withCells(citus!, names, (where, servers) =>
            run(result, log, (rcv) => setupSluice(rcv, { ...sizes, dir, ...cells, store: `Citus coordinator; ${where}` }), servers),
          );
          continue;
        }
        const store = (url: string) =>
          scenario === "pooled" ? { databaseUrl: throughPooler(url, pooler!.port), directUrl: url } : { databaseUrl: url };
        await withDatabase(pgs!.server.url, `${system.replace("-", "_")}_${scenario}_${rep}`, (url) =>
          run(result, log, (rcv) =>
            system !== "sluice"
              ? setupPeer(system, rcv, { ...sizes, module: peers, databaseUrl: url })
              : setupSluice(rcv, { ...sizes, dir, traced: scenario === "traced", ...store(url) }),
          ),
        );
      }
    }
  }
  if (pgs || citus) await cleanup(); // nothing else on the machine during the embedded run

  const embedded = { destinations: Math.min(100, destinations), events: Math.min(20_000, events) };
  for (let rep = 1; rep <= f.repeat && scenarios.includes("embedded") && systems.includes("sluice"); rep++) {
    const [dataDir, log] = [mkdtempSync(join(tmpdir(), "sluice-bench-pglite-")), `sluice-embedded${f.repeat > 1 ? `-${rep}` : ""}`];
    const result = newRun({ system: "sluice", scenario: "embedded", ...embedded, receiverDelayMs: 0, perDestinationCap: CAP });
    await run(result, log, (rcv) =>
      setupSluice(rcv, { databaseUrl: null, dataDir, ...embedded, workers: 0, concurrency: TUNED.sluice, log: bench.log(log), dir }),
    ).finally(() => rmSync(dataDir, { recursive: true, force: true }));
  }

  const summary = comparisonTable(runs);
  out(`\n${summary}\n\n${TARGETS_TEXT}`);
  out(
    "deliveries/s = distinct deliveries received ÷ (last receive − first publish); p50/p99 = publish → receive; " +
      "in flight = the most requests each system's settings allow at once (the 50 ms bound is that ÷ 0.05 s).",
  );
  const cells = runs.some((r) => r.scenario.startsWith("cell")) ? cellTable(runs) : null;
  if (cells) out(`\n${cells}\nµs/delivery: CPU time (/proc, process trees) ÷ distinct deliveries received; medians of the runs.`);
  const options = { ...f, scenarios, systems, embedded, sluiceDir: dir, tuned: TUNED };
  const poolerInfo = pooler ? { version, pool_mode: "transaction", default_pool_size: poolSize } : null;
  const citusInfo = citus && { version: citus.citusVersion, workerNodes: 2, settings: citusSettings };
  const servers = { postgres: pgs?.settings ?? null, citus: citusInfo, pooler: poolerInfo };
  bench.finish("delivery", { ...servers, options, results: runs, table: summary, cells });
}

runBench(main);
