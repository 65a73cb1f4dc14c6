// Quiet hours, two figures (docs/benchmarks.md):
//   drain  one destination inside a quiet window receives events with distinct occurred_at values,
//          published shuffled; the window is then closed a few seconds ahead and the receiver
//          records every arrival: none before the window's end, the rate limit kept and used,
//          occurred_at order. Then the same at max_concurrency 1, which shows the exact order.
//   cost   active destinations beside destinations in quiet hours holding deliveries, against the
//          active ones alone (bench/held-cost.ts).
import { writeFileSync } from "node:fs";
import { DateTime, IANAZone } from "luxon";
import type pg from "pg";
import { analyseOrder, rateFigures } from "./arrivals.js";
import { connect, deliveriesByStatus, withDatabase } from "./pg.js";
import { clusterFlags, parseFlags, runBench, sleep, waitQuiet } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, mark, table } from "./report.js";
import { SluiceCluster } from "./sluice.js";
import { BATCH, heldRuns, parseRunOrder, printComparison, wallTime, warmupFor } from "./held-cost.js";

/** Deterministic shuffle (mulberry32), so that a drain's publish order is the same in every run. */
function shuffled(n: number, seed: number): number[] {
  let a = seed >>> 0;
  const rnd = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

type DrainOutcome = Awaited<ReturnType<typeof drain>>;
type Status = { status?: string; queued_events?: number };

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
  saveArrivals: string | undefined;
}) {
  const { cluster, receiver } = o;
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
  const status = async (): Promise<Status> => cluster.must<Status>(200, "GET", `/v1/destinations/${id}`);

  // Ranks 0 … N−1 = occurred_at order (an hour ago, 1 ms apart), published in a shuffled order.
  const baseMs = Date.now() - 3_600_000;
  const order = shuffled(o.events, 20261121 + o.events);
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
  const arrivalsDuringPublish = (await receiver.progress()).logged;
  const statusAfterPublish = await status();
  log(
    `${fmt(o.events)} events published in ${(publishMs / 1000).toFixed(1)} s (shuffled); ${arrivalsDuringPublish} arrived; ` +
      `status ${JSON.stringify(statusAfterPublish.status)}, queued_events ${fmt(statusAfterPublish.queued_events)}`,
  );
  if (statusAfterPublish.status !== "quiet")
    throw new Error(`the drain destination is not "quiet" after publishing: ${JSON.stringify(statusAfterPublish)}`);

  const busy = await waitQuiet(o.waitQuietMs);
  // Close the window a few seconds ahead: it ends at the first instant the zone's wall clock reads quiet_end.
  const closing = { ...open, quiet_end: wallTime(o.zone, o.closeAfterS * 1000) };
  const windowEnd = (await cluster.must<{ quiet_until?: string }>(200, "PATCH", `/v1/destinations/${id}`, { delivery_schedule: closing }))
    .quiet_until;
  if (!windowEnd) throw new Error(`after the PATCH the window is not open`);
  const endMs = Date.parse(windowEnd);
  log(`window closes at ${windowEnd} (${closing.quiet_end} ${o.zone}); draining`);
  const afterEnd = (): string => ((Date.now() - endMs) / 1000).toFixed(0);
  await receiver.waitFor(
    (p) => p.logged >= o.events,
    endMs + ((2 * o.events) / o.rate + 60) * 1000,
    (p) => `  [drain ${o.label}] received ${fmt(p.logged)}/${fmt(o.events)}  t=${afterEnd()}s after the window's end`,
  );
  await sleep(500);
  const dump = (await receiver.dump())[`/o/${o.label}`] ?? { times: [], ranks: [] };
  const leases = await o.db.query<{ rank: number; xid: string; at_ms: number }>(
    `SELECT (e.payload->>'rank')::int AS rank, l.xid::text AS xid, (extract(epoch FROM l.at) * 1000)::float8 AS at_ms
       FROM bench_lease_log l JOIN deliveries d ON d.destination_id = l.destination_id AND d.id = l.delivery_id
       JOIN events e ON e.id = d.event_id
      WHERE l.destination_id = $1 ORDER BY l.seq`,
    [id],
  );
  if (o.saveArrivals) {
    const file = `${o.saveArrivals}-${o.label}.json`;
    writeFileSync(file, JSON.stringify({ windowEnd, endMs, times: dump.times, ranks: dump.ranks, leases: leases.rows }));
    log(`arrivals saved to ${file}`);
  }

  const t = dump.times.filter((_, i) => dump.ranks[i]! >= 0).sort((a, b) => a - b);
  const perSecond: number[] = [];
  for (const s of t.map((x) => Math.floor((x - endMs) / 1000)).filter((s) => s >= 0)) perSecond[s] = (perSecond[s] ?? 0) + 1;
  const descents = order.filter((r, i) => i > 0 && r < order[i - 1]!).length;
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
    statusAfterDrain: await status(),
    machineBusyBeforePct: busy,
    received: t.length,
    arrivalsDuringPublish,
    arrivalsBeforeWindowEnd: t.filter((x) => x < endMs).length,
    firstArrivalAfterEndMs: t.length ? Math.round(t[0]! - endMs) : null,
    drainS: t.length > 1 ? (t[t.length - 1]! - t[0]!) / 1000 : null,
    idealDrainS: Math.max(0, o.events - o.burst) / o.rate,
    ...rateFigures(t, o.rate, o.burst),
    order: analyseOrder(dump.times, dump.ranks, o.events, leases.rows),
    perSecond: Array.from(perSecond, (n) => n ?? 0),
    endState: await deliveriesByStatus(o.db, id),
  };
}

/**
 * Logs every lease (a row inserted into leases) with the id of the transaction that made
 * it: one claim transaction = one grant. A bench-only trigger in the drain's database.
 */
const LEASE_LOG = `
  CREATE TABLE bench_lease_log (seq bigserial PRIMARY KEY, destination_id text NOT NULL, delivery_id text NOT NULL, xid bigint NOT NULL, at timestamptz NOT NULL);
  CREATE FUNCTION bench_log_lease() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO bench_lease_log (destination_id, delivery_id, xid, at) VALUES (NEW.destination_id, NEW.delivery_id, txid_current(), clock_timestamp());
    RETURN NULL;
  END $$;
  CREATE TRIGGER bench_lease_log AFTER INSERT ON leases FOR EACH ROW EXECUTE FUNCTION bench_log_lease();`;

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
    order: {
      type: "str",
      arg: "RUNS",
      def: "AAB",
      help: "cost: the runs in order (default AAB: a pilot run without, then A and B; AB, BA, ABAB, …: the last A and the last B are compared)",
    },
    ...clusterFlags(900),
  });
  const { part, events, rate, concurrency, active, workers, timezone: zone } = f;
  const { "order-events": orderEvents, "order-rate": orderRate, "close-after-s": closeAfterS } = f;
  const { "quiet-destinations": quietDestinations, "held-per-destination": perDestination, "active-events": activeEvents } = f;
  if (!["drain", "cost", "all"].includes(part)) throw new Error(`--part takes drain, cost or all, not '${part}'`);
  if (!IANAZone.isValidZone(zone)) throw new Error(`--timezone: '${zone}' is not an IANA zone`);
  const burst = f.burst || rate;
  const waitQuietMs = f["wait-quiet-s"] * 1000;
  const fsync = !f["no-fsync"];
  const runOrder = parseRunOrder(f.order);
  const warmup = warmupFor(activeEvents);

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
  const pg = await bench.postgres(fsync);

  const drains: DrainOutcome[] = [];
  if (part !== "cost") {
    const receiver = await Receiver.start(bench.log("quiet-order-receiver.log"), { log: true });
    process.stderr.write(`\n▶ drain\n`);
    await withDatabase(pg.server.url, "quiet_drain", async (url) => {
      const cluster = new SluiceCluster({ databaseUrl: url, logPrefix: bench.log("quiet-drain") });
      const db = await connect(url);
      try {
        await cluster.startApi();
        await db.query(LEASE_LOG);
        await cluster.startWorkers(workers, true);
        const common = { cluster, db, receiver, zone, closeAfterS, waitQuietMs, saveArrivals: f["save-arrivals"] };
        drains.push(await drain({ ...common, label: "main", events, rate, burst, concurrency }));
        if (orderEvents > 0)
          drains.push(await drain({ ...common, label: "c1", events: orderEvents, rate: orderRate, burst: orderRate, concurrency: 1 }));
      } finally {
        await db.end().catch(() => undefined);
        await cluster.stop();
      }
    });
    for (const d of drains) printDrain(out, d);
  }

  let runs: Awaited<ReturnType<typeof heldRuns>> = [];
  let comparison = null;
  if (part !== "drain") {
    runs = await heldRuns({
      name: "quiet_cost",
      pg,
      order: runOrder,
      held: { kind: "quiet", destinations: quietDestinations, perDestination, timezone: zone, windowHours: 3 },
      describeB: `+ ${fmt(quietDestinations)} in quiet hours`,
      log: bench.log,
      receiver: await Receiver.start(bench.log("quiet-cost-receiver.log")),
      active,
      activeEvents,
      flags: f,
    });
    out(`\n── cost: ${fmt(active)} active destinations, with and without ${fmt(quietDestinations)} in quiet hours`);
    comparison = printComparison(out, runs, `B: + ${fmt(quietDestinations)} quiet`);
  }

  const [main, c1] = [drains.find((d) => d.label === "main"), drains.find((d) => d.label === "c1")];
  const g = main?.order.grants;
  bench.finish("quiet", {
    postgres: pg.settings,
    options: { ...f, burst, warmup, batch: BATCH },
    verdict: {
      drain: main && {
        arrivalsBeforeWindowEnd: main.arrivalsBeforeWindowEnd,
        windowsOverLimit: main.overLimit.strict,
        maxIn1s: main.maxIn1s,
        utilisation: main.utilisation,
        exactInversions: main.order.exactInversions,
        bucketInversions: main.order.bucketInversions,
        crossGrantInversions: g?.crossGrantInversions ?? null,
        leasedOutOfOrder: g?.leasedOutOfOrder ?? null,
        crossGrantOk: g ? g.crossGrantInversions === 0 : null,
        complete: main.received === main.events,
        // The brief's checks: order by 100 ms buckets (crossGrantOk is the exact, stricter one).
        ok:
          main.received === main.events &&
          main.arrivalsBeforeWindowEnd === 0 &&
          main.overLimit.strict === 0 &&
          (main.utilisation ?? 0) >= 0.98 &&
          main.order.bucketInversions === 0 &&
          (g?.leasedOutOfOrder ?? 1) === 0,
      },
      exactOrder: c1 && {
        exactInversions: c1.order.exactInversions,
        complete: c1.received === c1.events,
        arrivalsBeforeWindowEnd: c1.arrivalsBeforeWindowEnd,
      },
      cost: comparison,
    },
    drains,
    cost: runs,
  });
}

function printDrain(out: (s: string) => void, d: DrainOutcome): void {
  const o = d.order;
  const g = o.grants;
  const grant = (show: (x: NonNullable<typeof g>) => string): string => (g ? show(g) : "–");
  out(
    `\n── drain "${d.label}": ${fmt(d.events)} events, max_per_second ${d.rate}, burst_capacity ${d.burst}, max_concurrency ${d.concurrency}`,
  );
  out(
    `  window: ${JSON.stringify(d.scheduleWhilePublishing)} while publishing, then quiet_end ${d.scheduleClosing.quiet_end}: ` +
      `ends ${d.windowEnd} (${d.windowEndLocal})`,
  );
  out(
    `  published in ${fmt(d.publish.ms / 1000, 1)} s, shuffled (${fmt(d.publish.descentsInPublishOrder)} of ${fmt(d.events - 1)} consecutive ` +
      `publishes went down in rank); status after publishing ${JSON.stringify(d.statusAfterPublish.status)}`,
  );
  const zero = (n: number | undefined): string => (n === undefined ? "0 ?" : `0 ${mark(n === 0)}`);
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
      ["windows over burst + rate × length (jitter 0)", fmt(d.overLimit.strict), zero(d.overLimit.strict)],
      ["  … allowing 20 ms arrival jitter", fmt(d.overLimit.jitter20ms), ""],
      ["most arrivals in any sliding 1 s", fmt(d.maxIn1s), `≤ ${fmt(d.burst + d.rate)} (burst + rate)`],
      [
        "utilisation of the rate while backlogged",
        d.utilisation === null ? "–" : `${fmt(100 * d.utilisation, 1)} %`,
        `≥ 98 % ${mark(d.utilisation === null ? null : d.utilisation >= 0.98)}`,
      ],
      [
        "arrivals out of occurred_at order (exact)",
        fmt(o.exactInversions),
        d.concurrency === 1 ? zero(o.exactInversions) : "(concurrency > 1: see below)",
      ],
      ["  largest rank displacement / lateness (ms)", `${fmt(o.maxRankDisplacement)} / ${fmt(o.maxLatenessMs, 1)}`, ""],
      [`arrivals below a rank of an earlier ${o.bucketMs} ms bucket`, fmt(o.bucketInversions), zero(o.bucketInversions)],
      [
        "grants (claim transactions that leased)",
        grant((g) => `${fmt(g.count)} (first ${g.first}; size ${g.sizeMin}/${g.sizeMedian}/${g.sizeMax} min/median/max)`),
        "",
      ],
      ["deliveries leased out of occurred_at order", grant((g) => fmt(g.leasedOutOfOrder)), zero(g?.leasedOutOfOrder)],
      ["deliveries leased more than once", grant((g) => fmt(g.leasedAgain)), "0"],
      ["arrivals after a request of a later grant", grant((g) => fmt(g.crossGrantInversions)), zero(g?.crossGrantInversions)],
      ["inversions inside one grant only", grant((g) => fmt(g.withinGrantInversions)), ""],
    ]),
  );
  if (g && g.crossGrantInversions > 0) {
    out(
      `  overtaken requests belonged to grant ${g.overtakenGrants.map((x) => `#${x.grant} (size ${x.size}: ${x.overtaken} overtaken)`).join(", ")}` +
        `${g.overtakenGrants.length === 5 ? " …" : ""}; they arrived ${g.overtakenAtMs?.[0]}–${g.overtakenAtMs?.[1]} ms after the first arrival`,
    );
  }
  out(
    `  missing ${fmt(o.missing)}, repeated ${fmt(o.repeats)}; deliveries at the end ${JSON.stringify(d.endState)}; ` +
      `status after the drain ${JSON.stringify(d.statusAfterDrain.status)}`,
  );
  out(`  arrivals per second from the window's end: ${d.perSecond.slice(0, 12).join(" ")}${d.perSecond.length > 12 ? " …" : ""}`);
}

runBench(main);
