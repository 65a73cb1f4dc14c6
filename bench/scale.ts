// `npm run bench:scale`: do delivery throughput and the claim's cost stay flat from 1,000 to 100,000 destinations with the same
// total work (1,000,000 queued deliveries)? Per scale, on a fresh database: one destination created through the API as a
// template, the rest seeded with SQL, then N × `sluice worker` deliver everything. Target: deliveries/s ratio ≥ 0.8; the claim's
// cost (its transaction's average, from the workers' metrics) is printed beside it.
import type pg from "pg";
import { connect, withDatabase } from "./pg.js";
import { commonFlags, CpuSampler, parseFlags, runBench, waitQuiet } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, listFigures, mark, ratio, table } from "./report.js";
import { SluiceCluster } from "./sluice.js";

async function main(): Promise<void> {
  const f = parseFlags("npm run bench:scale", {
    deliveries: { def: 1_000_000, quick: 100_000, help: "queued deliveries at every scale" },
    scales: { type: "str", arg: "LIST", def: "1000,100000", quick: "100,10000", help: "destination counts, comma-separated" },
    ...commonFlags(1800),
    quick: { type: "bool", help: "small: 100,000 deliveries at 100 and 10,000 destinations" },
  });
  const scales = f.scales.split(",").map(Number);
  if (scales.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--scales takes whole numbers ≥ 1, not '${f.scales}'`);
  const bench = benchStart("scale");
  const { out } = bench;
  out(
    `workload: ${fmt(f.deliveries)} queued deliveries (one event each) round-robin over ${scales.map((s) => fmt(s)).join(" / ")} destinations; ` +
      `${f.workers} × sluice worker (max_concurrency 5); receiver answers at once. Destinations (but one, ` +
      `created through the API), events and deliveries are INSERTed with SQL — the rows POST /v1/events/batch writes — then VACUUM ANALYZE.`,
  );
  const { server, settings, postmaster } = await bench.postgres(!f["no-fsync"], false, f["pg-icu-locale"]);
  const receiver = await Receiver.start(bench.log("scale-receiver.log"));

  const oneScale = async (url: string, scale: number) => {
    const [cluster, db] = [new SluiceCluster({ databaseUrl: url, logPrefix: bench.log(`scale-${scale}`) }), await connect(url)];
    try {
      await cluster.startApi(); // Migrations, the default tenant and the template destination, through Sluice itself.
      const [templateId] = await cluster.createDestinations(1, () => ({ url: receiver.url("/d/0"), name: "scale-0" }));
      await cluster.stopApi();
      const seedStart = Date.now();
      await seed(db, { templateId: templateId!, scale, deliveries: f.deliveries, urlPrefix: receiver.url("/d/") });
      process.stderr.write(`  seeded in ${fmt((Date.now() - seedStart) / 1000, 1)} s\n`);

      const busyBeforePct = await waitQuiet(f["wait-quiet-s"] * 1000);
      await receiver.reset(f.deliveries);
      const cpu = new CpuSampler({ system: "sluice", pids: () => cluster.pids(), postmaster, receiver: receiver.pid }).begin();
      const spawnedAt = Date.now();
      await cluster.startWorkers(f.workers);
      const t = (): string => `  t=${fmt((Date.now() - spawnedAt) / 1000)}s`;
      await receiver.waitFor(f.deliveries, spawnedAt + f["timeout-s"] * 1000, fmt(scale), t);
      const [cpuUse, rep] = [cpu.end(), await receiver.report()];
      // Timed from the first arrival: the workers' start-up is not delivery.
      const span = rep.lastAt !== null && rep.firstAt !== null ? (rep.lastAt - rep.firstAt) / 1000 : null;
      const middle = rep.p10At !== null && rep.p90At !== null ? (rep.p90At - rep.p10At) / 1000 : null;
      return {
        destinations: scale,
        busyBeforePct,
        received: rep.unique,
        duplicates: rep.duplicates,
        perSec: span ? rep.unique / span : null,
        steadyPerSec: middle ? (Math.floor(0.9 * f.deliveries) - Math.floor(0.1 * f.deliveries)) / middle : null,
        startupS: rep.firstAt === null ? null : (rep.firstAt - spawnedAt) / 1000,
        cpu: cpuUse,
        engine: await cluster.engineMetrics(),
      };
    } finally {
      await db.end().catch(() => undefined);
      await cluster.stop();
    }
  };
  type Scale = Awaited<ReturnType<typeof oneScale>>;
  const results: Scale[] = [];
  for (const scale of scales) {
    process.stderr.write(`\n▶ ${fmt(scale)} destinations, ${fmt(f.deliveries)} deliveries\n`);
    results.push(await withDatabase(server.url, `scale_${scale}`, (url) => oneScale(url, scale)));
  }

  const figures: [string, (r: Scale) => string][] = [
    ["deliveries received", (r) => fmt(r.received)],
    ["deliveries/s (first → last arrival)", (r) => fmt(r.perSec)],
    ["deliveries/s (steady: middle 80 %)", (r) => fmt(r.steadyPerSec)],
    ["claims (worker metrics)", (r) => fmt(r.engine?.claims)],
    ["claim transaction avg ms", (r) => fmt(r.engine?.["claim avg ms"], 1)],
    ["deliveries per claim", (r) => fmt(r.engine?.["deliveries per claim"], 1)],
    ["CPU", (r) => listFigures({ sluice: r.cpu.sluice!, postgres: r.cpu.postgres!, other: r.cpu["(other processes, kernel)"]! })],
  ];
  const head = ["", ...results.map((r) => `${fmt(r.destinations)} destinations`)];
  out(`\n${table([head, ...figures.map(([name, v]) => [name, ...results.map(v)])])}`);
  const [first, last] = [results[0]!, results.at(-1)!];
  const tput = ratio(last.perSec, first.perSec);
  out(
    `\nverdict: deliveries/s ${fmt(last.destinations)} ÷ ${fmt(first.destinations)} destinations = ${fmt(tput, 3)} ` +
      `${mark(tput === null ? null : tput >= 0.8)} (target ≥ 0.8; steady middle 80 %: ${fmt(ratio(last.steadyPerSec, first.steadyPerSec), 3)})`,
  );
  if (results.some((r) => r.received < f.deliveries))
    out(`  ✗ a scale did not receive all its deliveries before the timeout: its figures are partial`);
  bench.finish("scale", { postgres: settings, options: { ...f, scales }, verdict: { throughputRatio: tput }, results });
}

// Writes what `POST /v1/destinations` and `POST /v1/events/batch` would have: destinations copying every other column of
// the template (so that columns added by later migrations come along), each with its own URL path and secret and an id in
// src/ids.ts's format; one event per delivery (occurred_at increasing); delivery k 'queued' for destination k mod scale
// with next_attempt_at = its occurred_at; each destination's ready_at = its first delivery's. Then VACUUM and CHECKPOINT.
async function seed(db: pg.Client, o: { templateId: string; scale: number; deliveries: number; urlPrefix: string }): Promise<void> {
  const tpl = (await db.query<{ tenant_id: string; url: string }>("SELECT tenant_id, url FROM destinations WHERE id = $1", [o.templateId]))
    .rows[0];
  if (tpl?.url !== `${o.urlPrefix}0`) throw new Error(`template destination missing or not at ${o.urlPrefix}0: ${JSON.stringify(tpl)}`);
  const [salt, baseMs] = [Math.random().toString(36).slice(2), Date.now()];
  // src/ids.ts: <prefix>_ + 12 hex (ms) + 3 hex (sequence within the ms) + 12 hex (random).
  const idSql = (prefix: string, k: string): string =>
    `'${prefix}_' || lpad(to_hex($1::bigint + ${k} / 4096), 12, '0') || lpad(to_hex(${k} % 4096), 3, '0') || substr(md5('${prefix}' || ${k} || $2::text), 1, 12)`;
  const columns = await db.query<{ c: string }>(
    `SELECT quote_ident(column_name) AS c FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = 'destinations' AND column_name NOT IN ('id', 'name', 'url', 'secrets', 'created_at', 'updated_at')`,
  );
  const copied = columns.rows.map((r) => r.c);
  await db.query(
    `INSERT INTO destinations (id, name, url, secrets, ${copied.join(", ")})
     SELECT ${idSql("dst", "g")}, 'scale-' || g, $3::text || g,
            jsonb_build_array(jsonb_build_object('secret', 'whsec_' || encode(decode(md5('a' || g || $2::text) || md5('b' || g || $2::text), 'hex'), 'base64'), 'expires_at', NULL)),
            ${copied.map((c) => `t.${c}`).join(", ")}
       FROM destinations t, generate_series(1, $4::int - 1) g
      WHERE t.id = $5`,
    [baseMs, salt, o.urlPrefix, o.scale, o.templateId],
  );
  await db.query(`CREATE TEMP TABLE dmap AS SELECT id, substring(url FROM '/d/([0-9]+)$')::int AS n FROM destinations;
                  CREATE UNIQUE INDEX ON dmap (n); ANALYZE dmap`);
  const t0 = new Date(Date.now() - 10_000); // occurred_at = t0 + k µs: in the past, increasing
  for (let lo = 0; lo < o.deliveries; lo += 100_000) {
    const hi = Math.min(o.deliveries, lo + 100_000) - 1;
    const params = [baseMs, salt, tpl.tenant_id, o.scale, t0, lo, hi];
    await db.query("BEGIN");
    await db.query(
      `INSERT INTO events (id, tenant_id, type, payload, occurred_at)
       SELECT ${idSql("evt", "k")}, $3, 'scale.event', ('{"seq":' || k || ',"dest":' || (k % $4::int) || '}')::json,
              $5::timestamptz + k * interval '1 microsecond'
         FROM generate_series($6::int, $7::int) k`,
      params,
    );
    await db.query(
      `INSERT INTO deliveries (destination_id, id, event_id, tenant_id, status, occurred_at, next_attempt_at)
       SELECT m.id, ${idSql("dlv", "k")}, ${idSql("evt", "k")}, $3, 'queued',
              $5::timestamptz + k * interval '1 microsecond', $5::timestamptz + k * interval '1 microsecond'
         FROM generate_series($6::int, $7::int) k, LATERAL (SELECT id FROM dmap WHERE dmap.n = k % $4::int) m`,
      params,
    );
    await db.query("COMMIT");
    process.stderr.write(`  seeded ${fmt(hi + 1)}/${fmt(o.deliveries)} events + deliveries\n`);
  }
  await db.query(
    `UPDATE destinations d SET ready_at = $1::timestamptz + m.n * interval '1 microsecond' FROM dmap m WHERE m.id = d.id AND m.n < $2::int`,
    [t0, o.deliveries],
  );
  await db.query("DROP TABLE dmap");
  await db.query("VACUUM ANALYZE destinations, events, deliveries");
  await db.query("CHECKPOINT");
}

runBench(main);
