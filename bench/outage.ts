// "Store outage" figures: what publishers and receivers see when Postgres goes away under load.
// `sluice start` on a throwaway Postgres server (fsync on), one publisher sending a batch every
// few ms. Run A: no outage. Run B: Postgres is stopped as `pg_ctl stop -m immediate` does, then
// started again. Each run on a fresh database; an in-process receiver counts webhook-ids.
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { ThrowawayPostgres } from "../scripts/pg-server.mjs";
import { adminQuery, withDatabase } from "./pg.js";
import { parseFlags, runBench, sleep } from "./procs.js";
import { benchStart, fmt, table } from "./report.js";
import { SluiceCluster } from "./sluice.js";

async function main(): Promise<void> {
  const f = parseFlags("npm run bench:outage", {
    "outage-s": { def: 8, quick: 3, help: "how long Postgres stays down in run B" },
    "before-s": { def: 3, quick: 1, help: "publishing before the outage" },
    "after-s": { def: 4, quick: 1, help: "publishing after the store's return" },
    destinations: { def: 10, help: "destinations" },
    batch: { def: 50, help: "events per publish" },
    "every-ms": { def: 20, min: 0, help: "pause between publishes" },
    runs: { type: "str", arg: "RUNS", def: "AB", help: "A = no outage, B = outage; e.g. AB (default), B, ABB" },
    quick: { type: "bool", help: "a 3 s outage, 1 s before and after" },
  });
  const { destinations, batch } = f;
  const { "outage-s": outageS, "before-s": beforeS, "after-s": afterS, "every-ms": everyMs } = f;
  const runs = f.runs.toUpperCase();
  if (!/^[AB]+$/.test(runs)) throw new Error(`--runs takes a string of A (no outage) and B (outage), not '${f.runs}'`);

  const bench = benchStart("store-outage");
  bench.out(
    `workload: sluice start on a throwaway Postgres server (fsync on), ${destinations} destinations, batches of ${batch} every ${everyMs} ms ` +
      `for ${beforeS + outageS + afterS} s; run B stops Postgres (immediate) after ${beforeS} s for ${outageS} s.`,
  );
  const { server: pg } = await bench.postgres(true);
  const results: RunOutcome[] = [];
  for (const [i, label] of [...runs].entries()) {
    const outage = label === "B";
    process.stderr.write(`\n▶ run ${label}${outage ? ` (${outageS} s outage)` : " (no outage)"}\n`);
    const o = {
      label,
      outage,
      pg,
      logPrefix: bench.log(`outage-${i + 1}-${label}`),
      destinations,
      batch,
      everyMs,
      beforeS,
      outageS,
      afterS,
    };
    const r = await withDatabase(pg.url, `outage_${i}`, (url) => oneRun({ ...o, url }));
    results.push(r);
    process.stderr.write(`  ${fmt(r.accepted)} accepted, ${r.lost} lost, ${r.duplicates} duplicates\n`);
  }

  const row = (label: string, cell: (r: RunOutcome) => string): string[] => [label, ...results.map(cell)];
  const ifOutage = (r: RunOutcome, cell: string): string => (r.outage ? cell : "—");
  bench.out("");
  bench.out(
    table([
      row("", (r) => `run ${r.label} (${r.outage ? `${outageS} s outage` : "no outage"})`),
      row("publishes by status", (r) =>
        Object.entries(r.publishesByStatus)
          .map(([s, n]) => `${s === "0" ? "no answer" : s}: ${fmt(n)}`)
          .join(", "),
      ),
      row("events accepted (202)", (r) => fmt(r.accepted)),
      row("lost", (r) => fmt(r.lost)),
      row("duplicates", (r) => fmt(r.duplicates)),
      row("store's return → first publish accepted", (r) => ifOutage(r, `${fmt(r.firstAcceptedAfterReturnMs)} ms`)),
      row("store's return → first delivery", (r) => ifOutage(r, `${fmt(r.firstDeliveryAfterReturnMs)} ms`)),
      row("store's return → backlog drained", (r) => ifOutage(r, `${fmt(r.backlogDrainedAfterReturnS, 2)} s`)),
      row("end of publishing → all delivered", (r) => `${fmt(r.drainAfterPublishingS, 2)} s`),
      row("deliveries/s over the run", (r) => fmt(r.deliveriesPerSec)),
      row("Sluice stayed up", (r) => (r.sluiceExitedDuringRun ? "NO" : "yes")),
    ]),
  );
  const a = results.find((r) => !r.outage);
  const b = results.filter((r) => r.outage).at(-1);
  if (a && b) {
    const drain = b.drainAfterPublishingS / Math.max(a.drainAfterPublishingS, 0.001);
    bench.out(`ratio (outage / baseline): events accepted ${fmt(b.accepted / a.accepted, 2)}, drain after publishing ${fmt(drain, 2)}`);
  }
  const slowReturn = (r: RunOutcome): boolean => r.outage && (r.firstDeliveryAfterReturnMs === null || r.firstDeliveryAfterReturnMs > 2000);
  const bad = results.filter((r) => r.lost > 0 || r.sluiceExitedDuringRun || slowReturn(r));
  bench.out(
    bad.length === 0
      ? "verdict: PASS — nothing lost, Sluice stayed up, delivery resumed within 2 s of the store's return"
      : `verdict: FAIL in run(s) ${bad.map((r) => r.label).join(", ")}`,
  );
  bench.finish("outage", { options: { outageS, beforeS, afterS, destinations, batch, everyMs, runs }, results });
  if (bad.length) process.exitCode = 1;
}

type RunOutcome = Awaited<ReturnType<typeof oneRun>>;

async function oneRun(o: {
  label: string;
  outage: boolean;
  pg: ThrowawayPostgres;
  url: string;
  logPrefix: string;
  destinations: number;
  batch: number;
  everyMs: number;
  beforeS: number;
  outageS: number;
  afterS: number;
}) {
  // The receiver: each webhook-id's arrivals, and every arrival's time.
  const arrivals = new Map<string, number>();
  const times: number[] = [];
  const receiver = http.createServer((req, res) => {
    const id = String(req.headers["webhook-id"] ?? "");
    req.resume();
    req.on("end", () => {
      times.push(Date.now());
      arrivals.set(id, (arrivals.get(id) ?? 0) + 1);
      res.writeHead(200).end();
    });
  });
  receiver.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const rxUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  const sluice = new SluiceCluster({
    databaseUrl: o.url,
    logPrefix: o.logPrefix,
    env: { SLUICE_LOG_LEVEL: "info", SLUICE_LOG_FORMAT: "json" },
  });
  const missing = (ids: Set<string>): string[] => [...ids].filter((id) => !arrivals.has(id));
  try {
    await sluice.startApi("start");
    const dests = await sluice.createDestinations(o.destinations, (i) => ({ url: `${rxUrl}/d${i}` }));

    const accepted = new Set<string>();
    const acceptedBeforeDown = new Set<string>();
    const acceptedAt: number[] = [];
    const byStatus: Record<string, number> = {};
    let publishing = true;
    let n = 0;
    let downAt: number | null = null;
    const t0 = Date.now();
    const publisher = (async () => {
      for (; publishing; await sleep(o.everyMs)) {
        const events = Array.from({ length: o.batch }, () => ({
          type: "outage.bench",
          payload: { n },
          destination_ids: [dests[n++ % dests.length]!],
        }));
        const r = await sluice.call("POST", "/v1/events/batch", { events }).catch(() => ({ status: 0, json: null }));
        byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
        if (r.status !== 202) continue;
        acceptedAt.push(Date.now());
        for (const e of (r.json as { events: { id: string }[] }).events) {
          accepted.add(e.id);
          if (downAt === null) acceptedBeforeDown.add(e.id);
        }
      }
    })();

    const storeOutage = async (): Promise<number> => {
      downAt = Date.now();
      await o.pg.crash();
      process.stderr.write(`  Postgres down at +${((downAt - t0) / 1000).toFixed(1)} s\n`);
      await sleep(o.outageS * 1000);
      await o.pg.restart();
      process.stderr.write(`  Postgres back at +${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
      return Date.now();
    };
    await sleep(o.beforeS * 1000);
    const backAt = o.outage ? await storeOutage() : await sleep(o.outageS * 1000).then(() => null);
    // The backlog drained: every event accepted before the outage has arrived.
    let backlogDrainedAt: number | null = null;
    const drainWatch = (async () => {
      if (backAt === null) return;
      while (!sluice.exited && missing(acceptedBeforeDown).length > 0) await sleep(10);
      backlogDrainedAt = Date.now();
    })();
    await sleep(o.afterS * 1000);
    const stillMissing = missing(acceptedBeforeDown);
    if (backAt !== null && stillMissing.length > 0) {
      // Why an event accepted before the outage is still missing now: its delivery row says.
      const rows = await adminQuery(
        o.url,
        `SELECT d.status, d.attempts, (l.expires_at - now())::text AS lease_left, (d.next_attempt_at - now())::text AS due_in,
                (ds.ready_at - now())::text AS dest_ready_in, count(*)::int AS n
           FROM deliveries d JOIN destinations ds ON ds.id = d.destination_id
           LEFT JOIN leases l ON l.destination_id = d.destination_id AND l.delivery_id = d.id WHERE d.event_id = ANY($1)
          GROUP BY 1, 2, 3, 4, 5 ORDER BY n DESC LIMIT 10`,
        [stillMissing],
      );
      process.stderr.write(`  ${stillMissing.length} events accepted before the outage still missing ${o.afterS} s after the return:\n`);
      for (const r of rows) process.stderr.write(`    ${JSON.stringify(r)}\n`);
    }
    publishing = false;
    await publisher;
    const publishedEnd = Date.now();
    while (missing(accepted).length > 0 && Date.now() < publishedEnd + 120_000 && !sluice.exited) await sleep(20);
    const drainedAt = Date.now();
    await drainWatch;
    await sleep(500); // late duplicates, if any
    const since = (at: number | null | undefined, scale = 1): number | null =>
      at == null || backAt === null ? null : (at - backAt) / scale;
    const firstAfterReturn = (ts: number[]): number | null => since(ts.find((t) => backAt !== null && t >= backAt));
    return {
      label: o.label,
      outage: o.outage,
      publishesByStatus: byStatus,
      accepted: accepted.size,
      lost: missing(accepted).length,
      duplicates: [...arrivals].reduce((d, [id, c]) => (accepted.has(id) ? d + c - 1 : d), 0),
      received: times.length,
      firstAcceptedAfterReturnMs: firstAfterReturn(acceptedAt),
      firstDeliveryAfterReturnMs: firstAfterReturn(times),
      backlogDrainedAfterReturnS: since(backlogDrainedAt, 1000),
      drainAfterPublishingS: (drainedAt - publishedEnd) / 1000,
      sluiceExitedDuringRun: sluice.exited,
      deliveriesPerSec: times.length / ((drainedAt - t0) / 1000),
    };
  } finally {
    await sluice.stop();
    await new Promise((r) => receiver.close(r));
    receiver.closeAllConnections();
  }
}

runBench(main);
