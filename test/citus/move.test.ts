// A cell moved to the other Citus node while it delivers (`npm run test:citus`): Citus copies the
// cell's tables with logical replication while Sluice keeps publishing and delivering through
// the coordinator, then switches over. Measured: events answered 202 and lost, duplicates at the
// receiver, whether a concurrency cap and a token bucket held, and how long publishing and
// delivery paused. Printed as a table (docs/citus.md quotes it).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createCell } from "../../src/db/cells.js";
import { openDb, type Db } from "../../src/db/db.js";
import { cellNodes } from "../../src/db/queries/cell-directory.js";
import { CITUS_URL, onServer } from "../helpers/db.js";
import { startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import { worstWindow } from "../helpers/windows.js";
import type { Destination } from "../helpers/api-types.js";

const CELL = `cell_move_${Math.random().toString(36).slice(2, 8)}`;
const CAP = 2;
const RATE = 20;
const BATCH_EVERY_MS = 100;
const SECONDS_BEFORE = 4;
const SECONDS_AFTER = 4;

let s: TestSluice;
let rx: Receiver;
let admin: Db;
const inflight = new Map<string, number>();
const maxInflight = new Map<string, number>();

before(async () => {
  if (!CITUS_URL) throw new Error("SLUICE_CITUS_URL is not set: run `npm run test:citus`");
  await createCell(CITUS_URL, CELL);
  admin = await openDb({ databaseUrl: CITUS_URL, poolSize: 2 });
  rx = await startReceiver(async (req) => {
    const path = req.path;
    const n = (inflight.get(path) ?? 0) + 1;
    inflight.set(path, n);
    maxInflight.set(path, Math.max(maxInflight.get(path) ?? 0, n));
    await new Promise((r) => setTimeout(r, 10));
    inflight.set(path, (inflight.get(path) ?? 1) - 1);
    return { status: 200 };
  });
  s = await startSluice("server", { databaseUrl: CITUS_URL, env: { SLUICE_CELLS: CELL, SLUICE_LOG_LEVEL: "warn" } });
});

after(async () => {
  await s?.stop();
  await rx?.close();
  await admin?.close();
  if (CITUS_URL) {
    await onServer(CITUS_URL, async (c) => {
      await c.query(`DROP SCHEMA IF EXISTS ${CELL} CASCADE`);
      await c.query("DELETE FROM public.sluice_tenant_cells WHERE cell = $1", [CELL]);
      await c.query("DELETE FROM public.sluice_cells WHERE name = $1", [CELL]);
    });
  }
});

test("a cell moved to the other node while it delivers: nothing lost, the cap and the bucket hold", { timeout: 300_000 }, async (t) => {
  const make = async (path: string, body: object): Promise<Destination> => {
    const r = await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}${path}`, ...body });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };
  await make("/capped", { event_types: ["move.all"], max_concurrency: CAP });
  await make("/limited", { event_types: ["move.limited"], rate_limit: { max_per_second: RATE, burst_capacity: RATE } });
  const plain = await Promise.all([1, 2, 3, 4].map((i) => make(`/plain/${i}`, { event_types: ["move.all"], max_concurrency: 10 })));
  const paths = ["/capped", "/limited", ...plain.map((_, i) => `/plain/${i + 1}`)];

  // Publishing: a batch of 10 events to five destinations and 2 to the rate-limited one, every
  // 100 ms; every answer is kept with its time.
  const acked = new Map<string, Set<string>>([
    ["move.all", new Set()],
    ["move.limited", new Set()],
  ]);
  const answers: { at: number; ms: number; status: number; code?: string }[] = [];
  let publishing = true;
  const publisher = (async () => {
    while (publishing) {
      const started = Date.now();
      const events = [
        ...Array.from({ length: 10 }, (_, i) => ({ type: "move.all", payload: { i } })),
        ...Array.from({ length: 2 }, (_, i) => ({ type: "move.limited", payload: { i } })),
      ];
      try {
        const r = await s.api<{ events: { id: string }[]; error?: { code: string } }>("POST", "/v1/events/batch", { events });
        answers.push({ at: started, ms: Date.now() - started, status: r.status, code: r.body.error?.code });
        if (r.status === 202) r.body.events.forEach((e, i) => acked.get(events[i]!.type)!.add(e.id));
      } catch {
        answers.push({ at: started, ms: Date.now() - started, status: 0 });
      }
      await new Promise((r) => setTimeout(r, Math.max(0, BATCH_EVERY_MS - (Date.now() - started))));
    }
  })();

  await new Promise((r) => setTimeout(r, SECONDS_BEFORE * 1000));
  const from = (await cellNodes(admin, [CELL])).get(CELL)!;
  const nodes = await admin.query<{ node: string }>(
    "SELECT nodename || ':' || nodeport AS node FROM pg_dist_node WHERE groupid > 0 AND isactive ORDER BY nodeport",
  );
  const to = nodes.map((n) => n.node).find((n) => n !== from)!;
  const [host, port] = [to.slice(0, to.lastIndexOf(":")), Number(to.slice(to.lastIndexOf(":") + 1))];
  const moveStarted = Date.now();
  await admin.query("SELECT citus_schema_move($1::regnamespace, $2, $3, 'force_logical')", [CELL, host, port]);
  const moveEnded = Date.now();
  assert.equal((await cellNodes(admin, [CELL])).get(CELL), to, "the cell is on the other node");
  await new Promise((r) => setTimeout(r, SECONDS_AFTER * 1000));
  publishing = false;
  await publisher;

  const expected = (path: string) => (path === "/limited" ? acked.get("move.limited")! : acked.get("move.all")!);
  await waitFor(
    () => paths.every((p) => new Set(rx.received.filter((r) => r.path === p).map((r) => r.headers["webhook-id"])).size >= expected(p).size),
    {
      timeoutMs: 180_000,
      intervalMs: 250,
      message: () => paths.map((p) => `${p}: ${rx.countByPath(p)} of ${expected(p).size}`).join(", "),
    },
  );

  // What arrived, per destination.
  let lost = 0;
  let duplicates = 0;
  for (const p of paths) {
    const ids = rx.received.filter((r) => r.path === p).map((r) => r.headers["webhook-id"]!);
    const unique = new Set(ids);
    duplicates += ids.length - unique.size;
    lost += [...expected(p)].filter((id) => !unique.has(id)).length;
  }
  const published = acked.get("move.all")!.size + acked.get("move.limited")!.size;
  const refused = answers.filter((a) => a.status !== 202);
  // Pauses: the longest gap between arrivals at the always-busy destinations, and the slowest
  // publish, in the move's window (from a second before to a second after).
  const inMove = (at: number) => at >= moveStarted - 1000 && at <= moveEnded + 1000;
  const arrivals = rx.received
    .filter((r) => r.path !== "/limited" && inMove(r.receivedAt))
    .map((r) => r.receivedAt)
    .sort((a, b) => a - b);
  const gap = arrivals.slice(1).reduce((g, at, i) => Math.max(g, at - arrivals[i]!), 0);
  const slowestPublish = Math.max(0, ...answers.filter((a) => inMove(a.at)).map((a) => a.ms));
  const steadyPublish = answers
    .filter((a) => !inMove(a.at))
    .map((a) => a.ms)
    .sort((a, b) => a - b);
  const limitedTimes = rx.received.filter((r) => r.path === "/limited").map((r) => r.receivedAt);
  const window = worstWindow(limitedTimes, RATE, RATE, 500);

  if (refused.length) t.diagnostic(`refused: ${refused.map((a) => `${a.status} ${a.code ?? ""}`).join(", ")}`);
  t.diagnostic(
    `cell ${CELL} moved ${from} → ${to} in ${((moveEnded - moveStarted) / 1000).toFixed(1)} s (citus_schema_move, force_logical)`,
  );
  t.diagnostic(
    "| events 202 | refused | lost | duplicates | move | longest delivery gap | slowest publish (steady p50) | cap 2 | bucket 20/s |",
  );
  t.diagnostic("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  t.diagnostic(
    `| ${published} | ${refused.length} | ${lost} | ${duplicates} | ${((moveEnded - moveStarted) / 1000).toFixed(1)} s | ` +
      `${gap} ms | ${slowestPublish} ms (${steadyPublish[Math.floor(steadyPublish.length / 2)] ?? 0} ms) | ` +
      `max ${maxInflight.get("/capped") ?? 0} in flight | ${window === null ? "held" : `over: ${JSON.stringify(window)}`} |`,
  );
  assert.deepEqual(refused, [], "every publish was accepted: a statement the move interrupted ran again");
  assert.equal(lost, 0, "nothing acknowledged is lost");
  assert.equal(duplicates, 0, "no worker died, so nothing is sent twice");
  assert.ok((maxInflight.get("/capped") ?? 0) <= CAP, `the cap held: ${maxInflight.get("/capped")} in flight`);
  assert.equal(window, null, "the bucket held");
  assert.ok(published > 0);
});
