// Quiet hours, two figures (one throwaway Postgres server, `sluice api` + N × `sluice worker`):
//   drain  One destination (max_per_second 100, burst 100, max_concurrency 200) inside a quiet
//          window receives 10,000 events whose occurred_at values are distinct and published in a
//          shuffled order. The window is then closed a few seconds ahead (PATCH delivery_schedule)
//          and the receiver records every arrival: none may come before the window's end, the
//          drain must keep the rate limit (no window over burst + rate × length), use it fully
//          (≥ 98 % while backlogged) and go in occurred_at order. A second, small drain at
//          max_concurrency 1 (20/s, 1,000 events) shows the exact order, which requests of one
//          grant sent side by side cannot guarantee on the wire.
//   cost   100 active destinations beside 10,000 destinations in quiet hours holding 10 deliveries
//          each, against the same 100 alone (bench/held-cost.ts): active throughput with/without
//          (target ≥ 0.95) and proof that the claim leaves the quiet destinations alone.
// Usage: npm run bench:quiet [-- --quick | --part drain | --part cost | --help]
import { writeFileSync } from "node:fs";
import { DateTime, IANAZone } from "luxon";
import type pg from "pg";
import { auditBucket } from "../src/policy/rate-audit.js";
import { bucketsFor } from "../src/policy/token-bucket.js";
import { analyseOrder } from "./drain-order.js";
import { connect, deliveriesByStatus, postmasterPid, withDatabase } from "./pg.js";
import { parseFlags, runBench, sleep, waitQuiet } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, mark, table } from "./report.js";
import { SluiceCluster } from "./sluice.js";
import { BATCH, heldRuns, parseRunOrder, printComparison, wallTime, type HeldRunOutcome } from "./held-cost.js";

// ---- drain ---------------------------------------------------------------------------------------

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type DrainOutcome = Awaited<ReturnType<typeof drain>>;

async function drain(o: {
  cluster: SluiceCluster;
  db: pg.Client;
  receiver: Receiver;
  label: string;
  events: number;
  rate: number;
  burst: number;
  concurrency: number;
  zone: string;
  closeAfterS: number;
  waitQuietMs: number;
  saveArrivals: string | null;
}) {
  const { cluster, db, receiver } = o;
  const log = (s: string): void => void process.stderr.write(`  [drain ${o.label}] ${s}\n`);
  // Open since a minute ago, ending in two hours: the whole publish happens inside it.
  const open = { timezone: o.zone, quiet_start: wallTime(o.zone, -60_000), quiet_end: wallTime(o.zone, 2 * 3_600_000) };
  const id = await cluster.createDestination({
    url: receiver.url(`/o/${o.label}`),
    name: `drain-${o.label}`,
    max_concurrency: o.concurrency,
    rate_limit: { max_per_second: o.rate, burst_capacity: o.burst },
    delivery_schedule: open,
  });
  await receiver.reset();
  const count = async (): Promise<number> => (await receiver.progress()).logged;

  // Ranks 0 … N−1 = occurred_at order (an hour ago, 1 ms apart); published in a shuffled order.
  const baseMs = Date.now() - 3_600_000;
  const order = Array.from({ length: o.events }, (_, i) => i);
  const rnd = mulberry32(20261121 + o.events);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  let descents = 0;
  for (let i = 1; i < order.length; i++) if (order[i]! < order[i - 1]!) descents++;
  const p0 = Date.now();
  for (let off = 0; off < o.events; off += BATCH) {
    await cluster.publishBatch(
      order.slice(off, off + BATCH).map((rank) => ({
        type: "bench.drain",
        payload: { rank, drain: o.label },
        destination_ids: [id],
        occurred_at: new Date(baseMs + rank).toISOString(),
      })),
    );
  }
  const publishMs = Date.now() - p0;
  await sleep(1000); // give a misbehaving claim the chance to send something
  const arrivalsDuringPublish = await count();
  const statusAfterPublish = (await cluster.call("GET", `/v1/destinations/${id}`)).json as { status?: string; queued_events?: number };
  log(
    `${fmt(o.events)} events published in ${(publishMs / 1000).toFixed(1)} s (shuffled); ${arrivalsDuringPublish} arrived; ` +
      `status ${JSON.stringify(statusAfterPublish.status)}, queued_events ${fmt(statusAfterPublish.queued_events)}`,
  );
  if (statusAfterPublish.status !== "quiet")
    throw new Error(`the drain destination is not "quiet" after publishing: ${JSON.stringify(statusAfterPublish)}`);

  const busy = await waitQuiet(o.waitQuietMs);
  // Close the window a few seconds ahead: the end is the first instant the zone's wall clock reads quiet_end.
  const closing = { ...open, quiet_end: wallTime(o.zone, o.closeAfterS * 1000) };
  const res = await cluster.call("PATCH", `/v1/destinations/${id}`, { delivery_schedule: closing });
  if (res.status !== 200) throw new Error(`PATCH /v1/destinations/${id} answered ${res.status}: ${JSON.stringify(res.json)}`);
  const windowEnd = (res.json as { quiet_until?: string | null }).quiet_until;
  if (!windowEnd) throw new Error(`after the PATCH the window is not open: ${JSON.stringify(res.json)}`);
  const endMs = Date.parse(windowEnd);
  log(`window closes at ${windowEnd} (${closing.quiet_end} ${o.zone}); draining`);

  const deadline = endMs + ((2 * o.events) / o.rate + 60) * 1000;
  let lastPrint = 0;
  for (;;) {
    const n = await count();
    if (n >= o.events || Date.now() > deadline) break;
    if (Date.now() - lastPrint > 5000) {
      log(`received ${fmt(n)}/${fmt(o.events)}  t=${((Date.now() - endMs) / 1000).toFixed(0)}s after the window's end`);
      lastPrint = Date.now();
    }
    await sleep(250);
  }
  await sleep(500);
  const dump = (await receiver.dump())[`/o/${o.label}`] ?? { times: [], ranks: [] };
  const leases = (
    await db.query<{ rank: number; xid: string; at_ms: number }>(
      `SELECT (e.payload->>'rank')::int AS rank, l.xid::text AS xid, (extract(epoch FROM l.at) * 1000)::float8 AS at_ms
       FROM bench_lease_log l JOIN deliveries d ON d.destination_id = l.destination_id AND d.id = l.delivery_id
       JOIN events e ON e.id = d.event_id
      WHERE l.destination_id = $1 ORDER BY l.seq`,
      [id],
    )
  ).rows;
  if (o.saveArrivals) {
    const file = `${o.saveArrivals}-${o.label}.json`;
    writeFileSync(file, JSON.stringify({ windowEnd, endMs, times: dump.times, ranks: dump.ranks, leases }));
    log(`arrivals saved to ${file}`);
  }
  const statusAfterDrain = (await cluster.call("GET", `/v1/destinations/${id}`)).json;
  const endState = await deliveriesByStatus(db, id);

  const t = dump.times.filter((_, i) => dump.ranks[i]! >= 0).sort((a, b) => a - b);
  const bucket = bucketsFor({ max_per_second: o.rate, burst_capacity: o.burst })[0]!;
  const strict = auditBucket(t, bucket, 0);
  let maxIn1s = 0;
  for (let i = 0, j = 0; j < t.length; j++) {
    while (t[j]! - t[i]! >= 1000) i++;
    maxIn1s = Math.max(maxIn1s, j - i + 1);
  }
  // As bench/flow-accuracy.ts: after the burst, over the middle 80 % of the backlogged drain.
  const after = t.slice(o.burst);
  const a = Math.floor(after.length * 0.1),
    z = Math.floor(after.length * 0.9);
  const utilisation = z - a > 1 ? (z - a) / ((after[z]! - after[a]!) / 1000) / o.rate : null;
  const perSec: number[] = [];
  for (const x of t) {
    const s = Math.floor((x - endMs) / 1000);
    if (s >= 0) perSec[s] = (perSec[s] ?? 0) + 1;
  }
  for (let s = 0; s < perSec.length; s++) perSec[s] ??= 0;
  return {
    label: o.label,
    destination: id,
    events: o.events,
    rate: o.rate,
    burst: o.burst,
    concurrency: o.concurrency,
    timezone: o.zone,
    scheduleWhilePublishing: open,
    scheduleClosing: closing,
    windowEnd,
    windowEndLocal: DateTime.fromMillis(endMs).setZone(o.zone).toISO() ?? "",
    publish: { ms: publishMs, eventsPerSec: o.events / Math.max(0.001, publishMs / 1000), descentsInPublishOrder: descents },
    statusAfterPublish,
    statusAfterDrain,
    machineBusyBeforePct: busy,
    received: t.length,
    arrivalsDuringPublish,
    arrivalsBeforeWindowEnd: t.filter((x) => x < endMs).length,
    firstArrivalAfterEndMs: t.length ? Math.round(t[0]! - endMs) : null,
    drainS: t.length > 1 ? (t[t.length - 1]! - t[0]!) / 1000 : null,
    idealDrainS: Math.max(0, o.events - o.burst) / o.rate,
    overLimit: { strict: strict.offending.length, jitter20ms: auditBucket(t, bucket, 20).offending.length, worst: strict.worst },
    maxIn1s,
    utilisation,
    order: analyseOrder(dump.times, dump.ranks, o.events, leases),
    perSecond: perSec,
    endState,
  };
}

/**
 * Records every lease (a delivery going to 'delivering') with the id of the transaction that made
 * it: one claim transaction = one grant. A bench-only trigger in the bench's own database; at the
 * drain's 100 deliveries/s its cost is a row insert per delivery.
 */
async function installLeaseLog(db: pg.Client): Promise<void> {
  await db.query(`
    CREATE TABLE bench_lease_log (seq bigserial PRIMARY KEY, destination_id text NOT NULL, delivery_id text NOT NULL, xid bigint NOT NULL, at timestamptz NOT NULL);
    CREATE FUNCTION bench_log_lease() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO bench_lease_log (destination_id, delivery_id, xid, at) VALUES (NEW.destination_id, NEW.id, txid_current(), clock_timestamp());
      RETURN NULL;
    END $$;
    CREATE TRIGGER bench_lease_log AFTER UPDATE OF status ON deliveries
      FOR EACH ROW WHEN (NEW.status = 'delivering' AND OLD.status IS DISTINCT FROM 'delivering') EXECUTE FUNCTION bench_log_lease();`);
}

// ---- main ------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const f = parseFlags("npm run bench:quiet", {
    part: { type: "str", arg: "drain|cost|all", def: "all", help: "which figures" },
    events: { def: 10_000, quick: 2000, help: "drain: events queued for the drained destination" },
    rate: { def: 100, help: "drain: its rate_limit.max_per_second" },
    burst: { def: 0, help: "drain: its rate_limit.burst_capacity (default: --rate)" },
    concurrency: { def: 200, help: "drain: its max_concurrency" },
    "order-events": { def: 1000, quick: 200, min: 0, help: "drain: the exact-order drain at max_concurrency 1 (0 = skip)" },
    "order-rate": { def: 20, help: "drain: its max_per_second (and burst)" },
    "close-after-s": { def: 3, help: "drain: the window is closed (PATCH) to end this many seconds ahead" },
    timezone: { type: "str", arg: "ZONE", def: "America/New_York", help: "drain: IANA zone of the windows" },
    "save-arrivals": {
      type: "str",
      arg: "PREFIX",
      help: "drain: write each drain's arrivals (times, ranks) and lease log to PREFIX-<drain>.json",
    },
    active: { def: 100, help: "cost: active destinations" },
    "quiet-destinations": { def: 10_000, quick: 1000, help: "cost: destinations in quiet hours in run B" },
    "held-per-destination": { def: 10, help: "cost: deliveries held by each" },
    "active-events": { def: 50_000, quick: 10_000, help: "cost: active workload, round-robin over the active destinations" },
    workers: { def: 2, help: "sluice worker processes beside one sluice api" },
    "timeout-s": { def: 900, help: "per run, for the deliveries to arrive" },
    "wait-quiet-s": { def: 60, min: 0, help: "before each timed run, wait up to N s for other processes to leave the CPU (0 = don't)" },
    order: {
      type: "str",
      arg: "RUNS",
      def: "AAB",
      help: "cost: the runs in order (default AAB: a pilot run without, then A and B; AB, BA, ABAB, …: the last A and the last B are compared)",
    },
    "no-fsync": { type: "bool", help: "Postgres with fsync=off (default: durable)" },
  });
  const { part, events, rate, concurrency, active, workers, quick } = f;
  if (!["drain", "cost", "all"].includes(part)) throw new Error(`--part takes drain, cost or all, not '${part}'`);
  const burst = f.burst || rate;
  const orderEvents = f["order-events"],
    orderRate = f["order-rate"],
    closeAfterS = f["close-after-s"],
    zone = f.timezone;
  const saveArrivals = f["save-arrivals"] ?? null;
  if (!IANAZone.isValidZone(zone)) throw new Error(`--timezone: '${zone}' is not an IANA zone`);
  const quietDestinations = f["quiet-destinations"],
    perDestination = f["held-per-destination"],
    activeEvents = f["active-events"];
  const timeoutMs = f["timeout-s"] * 1000,
    waitQuietMs = f["wait-quiet-s"] * 1000,
    fsync = !f["no-fsync"];
  const runOrder = parseRunOrder(f.order);
  const warmup = Math.min(5000, Math.max(BATCH, Math.round(activeEvents / 20 / BATCH) * BATCH));

  const bench = benchStart("quiet-hours");
  const { out } = bench;
  if (part !== "cost") {
    out(
      `drain: 1 destination, max_per_second ${rate}, burst_capacity ${burst}, max_concurrency ${concurrency}, quiet hours in ${zone}; ` +
        `${fmt(events)} events (distinct occurred_at, published shuffled) queued inside the window, which is then closed ${closeAfterS} s ahead` +
        `${orderEvents > 0 ? `; then the same at max_concurrency 1, ${orderRate}/s, ${fmt(orderEvents)} events` : ""}.`,
    );
  }
  if (part !== "drain") {
    out(
      `cost: ${fmt(active)} active destinations (Sluice's defaults), ${fmt(activeEvents)} events round-robin, all due at once (deliver_at); ` +
        `run B adds ${fmt(quietDestinations)} destinations in quiet hours holding ${fmt(perDestination)} deliveries each ` +
        `(${fmt(quietDestinations * perDestination)}); ${fmt(warmup)} warm-up deliveries first in every run (not measured); runs ${runOrder.join(" → ")}.`,
    );
  }
  out(`sluice api + ${workers} × sluice worker on one throwaway Postgres server; each part or run on a fresh database.`);
  const { server, settings } = await bench.postgres(fsync);

  // ---- drain ----
  const drains: DrainOutcome[] = [];
  if (part !== "cost") {
    const receiver = await Receiver.start(bench.log("quiet-order-receiver.log"), { log: true });
    process.stderr.write(`\n▶ drain\n`);
    await withDatabase(server.url, "quiet_drain", async (url) => {
      const cluster = new SluiceCluster({ databaseUrl: url, logPrefix: bench.log("quiet-drain") });
      const db = await connect(url);
      try {
        await cluster.startApi();
        await installLeaseLog(db);
        await cluster.startWorkers(workers, true);
        drains.push(
          await drain({
            cluster,
            db,
            receiver,
            label: "main",
            events,
            rate,
            burst,
            concurrency,
            zone,
            closeAfterS,
            waitQuietMs,
            saveArrivals,
          }),
        );
        if (orderEvents > 0) {
          drains.push(
            await drain({
              cluster,
              db,
              receiver,
              label: "c1",
              events: orderEvents,
              rate: orderRate,
              burst: orderRate,
              concurrency: 1,
              zone,
              closeAfterS,
              waitQuietMs,
              saveArrivals,
            }),
          );
        }
      } finally {
        await db.end().catch(() => undefined);
        await cluster.stop();
      }
    });
    for (const d of drains) printDrain(out, d);
  }

  // ---- cost ----
  const runs: HeldRunOutcome[] = [];
  let comparison: ReturnType<typeof printComparison> | null = null;
  if (part !== "drain") {
    const receiver = await Receiver.start(bench.log("quiet-cost-receiver.log"));
    runs.push(
      ...(await heldRuns({
        name: "quiet_cost",
        serverUrl: server.url,
        order: runOrder,
        held: { kind: "quiet", destinations: quietDestinations, perDestination, timezone: zone, windowHours: 3 },
        describeB: `+ ${fmt(quietDestinations)} in quiet hours`,
        logPrefix: bench.log,
        run: { receiver, active, activeEvents, workers, warmup, timeoutMs, waitQuietMs, postmaster: () => postmasterPid(server.dataDir) },
      })),
    );
    out(`\n── cost: ${fmt(active)} active destinations, with and without ${fmt(quietDestinations)} in quiet hours`);
    comparison = printComparison(out, runs, `${fmt(quietDestinations)} quiet`);
  }

  out(
    `\nnotes: drain — arrival times are taken by the receiver when a request's headers are parsed; the window's end is the ` +
      `quiet_until the PATCH answered. A "grant" is what one claim transaction leased (bench-only trigger on deliveries in the drain's ` +
      `database). cost — only delivery is timed: the active workload is published with one deliver_at after publishing ends; ` +
      `every run gets the same warm-up, VACUUM ANALYZE and CHECKPOINT; a pilot run (default --order AAB) is not compared. On a shared 2-core machine runs vary by ±10-15 %: ` +
      `compare ratios only when "CPU other processes" is low in both runs. --quick runs only prove the bench works.`,
  );
  const main = drains.find((d) => d.label === "main");
  const c1 = drains.find((d) => d.label === "c1");
  bench.finish("quiet", {
    postgres: settings,
    options: {
      part,
      events,
      rate,
      burst,
      concurrency,
      orderEvents,
      orderRate,
      closeAfterS,
      timezone: zone,
      active,
      quietDestinations,
      perDestination,
      activeEvents,
      warmup,
      workers,
      timeoutMs,
      fsync,
      quick,
      batch: BATCH,
      order: runOrder.join(""),
    },
    verdict: {
      drain: main
        ? {
            arrivalsBeforeWindowEnd: main.arrivalsBeforeWindowEnd,
            windowsOverLimit: main.overLimit.strict,
            maxIn1s: main.maxIn1s,
            utilisation: main.utilisation,
            exactInversions: main.order.exactInversions,
            bucketInversions: main.order.bucketInversions,
            crossGrantInversions: main.order.grants?.crossGrantInversions ?? null,
            leasedOutOfOrder: main.order.grants?.leasedOutOfOrder ?? null,
            crossGrantOk: main.order.grants ? main.order.grants.crossGrantInversions === 0 : null,
            complete: main.received === main.events,
            // The brief's checks: order by 100 ms buckets (crossGrantOk is the exact, stricter one).
            ok:
              main.received === main.events &&
              main.arrivalsBeforeWindowEnd === 0 &&
              main.overLimit.strict === 0 &&
              (main.utilisation ?? 0) >= 0.98 &&
              main.order.bucketInversions === 0 &&
              (main.order.grants?.leasedOutOfOrder ?? 1) === 0,
          }
        : null,
      exactOrder: c1
        ? {
            exactInversions: c1.order.exactInversions,
            complete: c1.received === c1.events,
            arrivalsBeforeWindowEnd: c1.arrivalsBeforeWindowEnd,
          }
        : null,
      cost: comparison,
    },
    drains,
    cost: runs,
  });
}

function printDrain(out: (s: string) => void, d: DrainOutcome): void {
  const g = d.order.grants;
  out(
    `\n── drain "${d.label}": ${fmt(d.events)} events, max_per_second ${d.rate}, burst_capacity ${d.burst}, max_concurrency ${d.concurrency}`,
  );
  out(
    `  window: ${JSON.stringify(d.scheduleWhilePublishing)} while publishing, then quiet_end ${d.scheduleClosing.quiet_end}: ends ${d.windowEnd} (${d.windowEndLocal})`,
  );
  out(
    `  published in ${fmt(d.publish.ms / 1000, 1)} s, shuffled (${fmt(d.publish.descentsInPublishOrder)} of ${fmt(d.events - 1)} consecutive publishes went down in rank); ` +
      `status after publishing ${JSON.stringify((d.statusAfterPublish as { status?: string }).status)}`,
  );
  out(
    table([
      ["", "measured", "target"],
      ["received", `${fmt(d.received)}/${fmt(d.events)}`, ""],
      [
        "arrivals while publishing / before the window's end",
        `${fmt(d.arrivalsDuringPublish)} / ${fmt(d.arrivalsBeforeWindowEnd)}`,
        `0 / 0 ${mark(d.arrivalsBeforeWindowEnd === 0 && d.arrivalsDuringPublish === 0)}`,
      ],
      ["first arrival after the window's end (ms)", fmt(d.firstArrivalAfterEndMs), ""],
      ["drain, first → last arrival (s)", fmt(d.drainS, 1), `≥ ${fmt(d.idealDrainS, 1)} at the rate`],
      ["windows over burst + rate × length (jitter 0)", fmt(d.overLimit.strict), `0 ${mark(d.overLimit.strict === 0)}`],
      ["  … allowing 20 ms arrival jitter", fmt(d.overLimit.jitter20ms), ""],
      ["most arrivals in any sliding 1 s", fmt(d.maxIn1s), `≤ ${fmt(d.burst + d.rate)} (burst + rate)`],
      [
        "utilisation of the rate while backlogged",
        d.utilisation === null ? "–" : `${fmt(100 * d.utilisation, 1)} %`,
        `≥ 98 % ${mark(d.utilisation === null ? null : d.utilisation >= 0.98)}`,
      ],
      [
        "arrivals out of occurred_at order (exact)",
        fmt(d.order.exactInversions),
        d.concurrency === 1 ? `0 ${mark(d.order.exactInversions === 0)}` : "(concurrency > 1: see below)",
      ],
      ["  largest rank displacement / lateness (ms)", `${fmt(d.order.maxRankDisplacement)} / ${fmt(d.order.maxLatenessMs, 1)}`, ""],
      [
        `arrivals below a rank of an earlier ${d.order.bucketMs} ms bucket`,
        fmt(d.order.bucketInversions),
        `0 ${mark(d.order.bucketInversions === 0)}`,
      ],
      [
        "grants (claim transactions that leased)",
        g ? `${fmt(g.count)} (first ${g.first}; size ${g.sizeMin}/${g.sizeMedian}/${g.sizeMax} min/median/max)` : "–",
        "",
      ],
      ["deliveries leased out of occurred_at order", g ? fmt(g.leasedOutOfOrder) : "–", `0 ${mark(g ? g.leasedOutOfOrder === 0 : null)}`],
      ["deliveries leased more than once", g ? fmt(g.leasedAgain) : "–", "0"],
      [
        "arrivals after a request of a later grant",
        g ? fmt(g.crossGrantInversions) : "–",
        `0 ${mark(g ? g.crossGrantInversions === 0 : null)}`,
      ],
      ["inversions inside one grant only", g ? fmt(g.withinGrantInversions) : "–", ""],
    ]),
  );
  if (g && g.crossGrantInversions > 0) {
    out(
      `  overtaken requests belonged to grant ${g.overtakenGrants.map((x) => `#${x.grant} (size ${x.size}: ${x.overtaken} overtaken)`).join(", ")}` +
        `${g.overtakenGrants.length === 5 ? " …" : ""}; they arrived ${g.overtakenAtMs?.[0]}–${g.overtakenAtMs?.[1]} ms after the first arrival`,
    );
  }
  out(
    `  missing ${fmt(d.order.missing)}, repeated ${fmt(d.order.repeats)}; deliveries at the end ${JSON.stringify(d.endState)}; ` +
      `status after the drain ${JSON.stringify((d.statusAfterDrain as { status?: string }).status)}`,
  );
  out(`  arrivals per second from the window's end: ${d.perSecond.slice(0, 12).join(" ")}${d.perSecond.length > 12 ? " …" : ""}`);
}

runBench(main);
