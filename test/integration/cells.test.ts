import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { openDb, type Queryable } from "../../src/db/db.js";
import { createCell } from "../../src/db/cells.js";
import { cellUrl } from "../../src/db/cell-url.js";
import { cellOfTenant, listCells } from "../../src/db/queries/cell-directory.js";
import { lockKey, RETENTION_LOCK } from "../../src/db/advisory-locks.js";
import { WORK_CHANNEL } from "../../src/db/channels.js";
import { CITUS_URL, createTestDatabase, onServer, type TestDatabase } from "../helpers/db.js";
import { startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { spawnSluiceCli } from "../helpers/processes.js";
import { startPgBouncer, throughPooler } from "../../scripts/pgbouncer.mjs";
import { waitFor } from "../helpers/wait-for.js";
import type { Destination, EventAccepted } from "../helpers/api-types.js";

// Cells (docs/citus.md): whole stores in schemas of one database, made by `sluice cells
// create`, served together by one process. On a plain Postgres server in `npm test`; on a Citus
// cluster, where each cell is a distributed schema, in `npm run test:citus`.

const ADMIN = "sk_admin_cells_test";

/** A database to hold cells: a new one on the test server, or the Citus coordinator. */
async function cellHome(): Promise<TestDatabase> {
  if (!CITUS_URL) return createTestDatabase();
  return { url: CITUS_URL, drop: async () => undefined };
}

describe("cells", () => {
  let home: TestDatabase;
  let names: { a: string; b: string };
  /** The API key of the tenant made in the second cell. */
  let secondKey = "";
  let s: TestSluice;
  let rx: Receiver;
  before(async () => {
    home = await cellHome();
    const tag = Math.random().toString(36).slice(2, 8);
    names = { a: `cell_a_${tag}`, b: `cell_b_${tag}` };
    rx = await startReceiver();
  });
  after(async () => {
    await s?.stop();
    await rx?.close();
    if (CITUS_URL) {
      await onServer(home.url, async (c) => {
        for (const n of Object.values(names)) {
          await c.query(`DROP SCHEMA IF EXISTS ${n} CASCADE`);
          await c.query("DELETE FROM public.sluice_tenant_cells WHERE cell = $1", [n]);
          await c.query("DELETE FROM public.sluice_cells WHERE name = $1", [n]);
        }
      });
    }
    await home?.drop();
  });

  test("sluice cells create makes, migrates and lists a cell; again, it changes nothing", async () => {
    const a = await createCell(home.url, names.a);
    assert.equal(a.created, true);
    assert.ok(a.applied.length > 10, "every migration ran in the cell");
    assert.equal(a.node !== null, CITUS_URL !== undefined, "a node is named on Citus only");
    const again = await createCell(home.url, names.a);
    assert.deepEqual({ created: again.created, applied: again.applied }, { created: false, applied: [] });
    // Through the CLI, as a user would.
    const p = spawnSluiceCli(["cells", "create", names.b], { DATABASE_URL: home.url });
    assert.equal(await p.exited, 0, p.output());
    assert.match(p.output(), new RegExp(`cell ${names.b} created`));
    const list = spawnSluiceCli(["cells", "list", "--json"], { DATABASE_URL: home.url });
    assert.equal(await list.exited, 0, list.output());
    const listed = (JSON.parse(list.output()) as { data: { name: string; tenants: number }[] }).data.map((c) => c.name);
    assert.ok(listed.includes(names.a) && listed.includes(names.b), list.output());
    // Each cell is a store of its own: its tables are in its schema, nothing in public.
    const db = await openDb({ databaseUrl: cellUrl(home.url, names.b), poolSize: 1 });
    try {
      const [t] = await db.query<{ schema: string }>(
        "SELECT table_schema AS schema FROM information_schema.tables WHERE table_name = 'deliveries' AND table_schema = current_schema()",
      );
      assert.equal(t?.schema, names.b);
    } finally {
      await db.close();
    }
  });

  test("a cell the directory does not list stops the start, naming it", async () => {
    await assert.rejects(
      startSluice("server", { databaseUrl: home.url, env: { SLUICE_CELLS: `${names.a},no_such_cell` } }),
      (err: { code?: string; message?: string }) => err.code === "SLUICE_CELL_UNKNOWN" && /no_such_cell/.test(err.message ?? ""),
    );
  });

  test("one process serves both cells: each tenant's requests go to its own cell, and both deliver", async () => {
    s = await startSluice("server", { databaseUrl: home.url, env: { SLUICE_CELLS: `${names.a},${names.b}`, SLUICE_ADMIN_KEY: ADMIN } });
    assert.deepEqual(
      s.running.cells.map((c) => c.cell),
      [names.a, names.b],
    );
    const health = await s.api<{ status: string; cells: string[] }>("GET", "/healthz", undefined, { key: null });
    assert.deepEqual(health.body, { status: "ok", cells: [names.a, names.b] });

    // The default tenant (SLUICE_API_KEY) lives in the first cell.
    const d1 = await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/one` });
    assert.equal(d1.status, 201);
    const dir = s.running.db;
    const [tenant1] = await dir.query<{ id: string }>("SELECT id FROM tenants WHERE is_default");
    assert.equal(await cellOfTenant(dir, tenant1!.id), names.a);

    // A new tenant in the cell Sluice-Cell names, with its own key.
    const admin = { key: ADMIN };
    const created = await s.api<{ id: string; api_key: string }>(
      "POST",
      "/v1/tenants",
      { name: "second" },
      { ...admin, headers: { "sluice-cell": names.b } },
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const t2 = created.body;
    secondKey = t2.api_key;
    assert.equal(await cellOfTenant(dir, t2.id), names.b);
    const d2 = await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/two` }, { key: t2.api_key });
    assert.equal(d2.status, 201);
    const inB = await openDb({ databaseUrl: cellUrl(home.url, names.b), poolSize: 1 });
    try {
      assert.deepEqual(
        (await inB.query<{ id: string }>("SELECT id FROM destinations")).map((r) => r.id),
        [d2.body.id],
        "the second tenant's destination is in its cell, and only it",
      );
    } finally {
      await inB.close();
    }

    // Publishing with each key delivers from each cell.
    const e1 = await s.api<EventAccepted>("POST", "/v1/events", { type: "c.one", payload: { n: 1 } });
    const e2 = await s.api<EventAccepted>("POST", "/v1/events", { type: "c.two", payload: { n: 2 } }, { key: t2.api_key });
    assert.equal(e1.status, 202);
    assert.equal(e2.status, 202);
    await waitFor(() => rx.received.some((r) => r.path === "/one") && rx.received.some((r) => r.path === "/two"), {
      message: () => `received ${rx.received.map((r) => r.path).join(", ")}`,
    });

    // Tenants do not see across cells: one's destination is another's 404.
    assert.equal((await s.api("GET", `/v1/destinations/${d2.body.id}`)).status, 404);
    assert.equal((await s.api("GET", `/v1/destinations/${d2.body.id}`, undefined, { key: t2.api_key })).status, 200);
    // The admin key acts for a tenant in whichever cell it lives.
    const viaAdmin = await s.api<{ data: Destination[] }>("GET", "/v1/destinations", undefined, {
      ...admin,
      headers: { "sluice-tenant": t2.id },
    });
    assert.deepEqual(
      viaAdmin.body.data.map((d) => d.id),
      [d2.body.id],
    );
    // A new tenant with no cell named goes to the cell with the fewest (each has one: the first).
    const third = await s.api<{ id: string }>("POST", "/v1/tenants", { name: "third" }, admin);
    assert.equal(await cellOfTenant(dir, third.body.id), names.a);
    const fourth = await s.api<{ id: string }>("POST", "/v1/tenants", { name: "fourth" }, admin);
    assert.equal(await cellOfTenant(dir, fourth.body.id), names.b);
    // Listed tenants: those of the cell named.
    const inCellB = await s.api<{ data: { id: string }[] }>("GET", "/v1/tenants", undefined, {
      ...admin,
      headers: { "sluice-cell": names.b },
    });
    assert.deepEqual(inCellB.body.data.map((t) => t.id).sort(), [t2.id, fourth.body.id].sort());
    const counts = new Map((await listCells(dir)).map((c) => [c.name, c.tenants]));
    assert.deepEqual([counts.get(names.a), counts.get(names.b)], [2, 2]);
    // An unknown key is still 401, a cell not served 404 naming it.
    assert.equal((await s.api("GET", "/v1/destinations", undefined, { key: "sk_nobody" })).status, 401);
    // The database gauges: one series per served cell.
    const metricsText = (await s.api<string>("GET", "/metrics", undefined, { key: null })).body;
    for (const cell of [names.a, names.b]) {
      assert.match(metricsText, new RegExp(`sluice_inflight\\{cell="${cell}"\\} 0`));
      assert.match(metricsText, new RegExp(`sluice_destination_health\\{status="healthy",cell="${cell}"\\} 1`));
    }
    const elsewhere = await s.api<{ error: { code: string } }>("GET", "/v1/tenants", undefined, {
      ...admin,
      headers: { "sluice-cell": "cell_nowhere" },
    });
    assert.equal(elsewhere.status, 404);
    assert.equal(elsewhere.body.error.code, "SLUICE_CELL_NOT_SERVED");
  });

  test("each cell's janitor locks are its own: one cell's retention round never makes another's skip", async () => {
    const [a, b] = s.running.cells;
    const tryLock = (q: Queryable) =>
      q.query<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(${lockKey("$1")}) AS ok`, [RETENTION_LOCK]);
    await a!.db.tx(async (q) => {
      assert.deepEqual(await tryLock(q), [{ ok: true }]);
      // Held in cell a: cell b takes its own at once; a second session of cell a cannot.
      assert.deepEqual(await b!.db.tx((qb) => tryLock(qb)), [{ ok: true }]);
      assert.deepEqual(await a!.db.tx((qa) => tryLock(qa)), [{ ok: false }]);
    });
  });

  test("a cell's notifications are its own: another cell's publishes do not wake its workers", async () => {
    const [a, b] = s.running.cells;
    const heard: string[] = [];
    const off = await a!.db.listen(WORK_CHANNEL, (payload) => heard.push(payload));
    try {
      await b!.db.notify(WORK_CHANNEL, "from b");
      await a!.db.notify(WORK_CHANNEL, "from a");
      await waitFor(() => heard.includes("from a"));
      assert.deepEqual(heard, ["from a"], "only its own cell's notification");
    } finally {
      await off();
    }
  });

  test("behind PgBouncer, each cell is reached as a role of its own, and both deliver", async () => {
    // A role per cell whose default search_path is the cell, as docs/citus.md tells an operator to
    // make; PgBouncer in transaction mode in front (it refuses the options parameter).
    const role = (cell: string) => `sluice_${cell}`;
    await onServer(home.url, async (c) => {
      for (const cell of [names.a, names.b]) {
        await c.query(`CREATE ROLE ${role(cell)} LOGIN`);
        await c.query(`GRANT ${decodeURIComponent(new URL(home.url).username)} TO ${role(cell)}`);
        await c.query(`ALTER ROLE ${role(cell)} SET search_path = ${cell}`);
      }
    });
    const bouncer = await startPgBouncer(home.url, { users: [role(names.a), role(names.b)] });
    const pooled = new URL(throughPooler(home.url, bouncer.port));
    pooled.username = "sluice_{cell}";
    let p: TestSluice | null = null;
    try {
      p = await startSluice("server", {
        databaseUrl: pooled.toString(),
        env: { SLUICE_CELLS: `${names.a},${names.b}`, SLUICE_DIRECT_DATABASE_URL: home.url, SLUICE_ADMIN_KEY: ADMIN },
      });
      for (const [i, c] of p.running.cells.entries()) {
        const [who] = await c.db.query<{ role: string; schema: string }>("SELECT current_user AS role, current_schema() AS schema");
        assert.deepEqual(who, { role: role(c.cell), schema: c.cell }, `cell ${i} through the pooler`);
      }
      rx.reset();
      const one = await p.api<EventAccepted>("POST", "/v1/events", { type: "c.one", payload: { pooled: 1 } });
      const two = await p.api<EventAccepted>("POST", "/v1/events", { type: "c.two", payload: { pooled: 2 } }, { key: secondKey });
      assert.deepEqual([one.status, two.status], [202, 202]);
      await waitFor(
        () =>
          rx.received.some((r) => r.headers["webhook-id"] === one.body.id) &&
          rx.received.some((r) => r.headers["webhook-id"] === two.body.id),
        {
          message: () => `received ${rx.received.map((r) => r.path).join(", ")}`,
        },
      );
      // Without {cell}, behind a pooler: refused at start, saying what to write.
      await assert.rejects(
        startSluice("server", {
          databaseUrl: throughPooler(home.url, bouncer.port),
          env: { SLUICE_CELLS: names.a, SLUICE_DIRECT_DATABASE_URL: home.url },
        }),
        /role per cell/,
      );
    } finally {
      await p?.stop();
      await bouncer.stop();
      await onServer(home.url, async (c) => {
        for (const cell of [names.a, names.b]) await c.query(`DROP ROLE IF EXISTS ${role(cell)}`);
      });
    }
  });

  test("a process serving one cell refuses a tenant of another, naming its cell", async () => {
    const only = await startSluice("server", {
      databaseUrl: home.url,
      worker: false,
      env: { SLUICE_CELLS: names.a, SLUICE_ADMIN_KEY: ADMIN },
    });
    try {
      const [t2] = await s.running.cells[1]!.db.query<{ id: string }>("SELECT id FROM tenants ORDER BY id LIMIT 1");
      const res = await only.api<{ error: { code: string; message: string } }>("GET", "/v1/destinations", undefined, {
        key: ADMIN,
        headers: { "sluice-tenant": t2!.id },
      });
      assert.equal(res.status, 404);
      assert.equal(res.body.error.code, "SLUICE_CELL_NOT_SERVED");
      assert.match(res.body.error.message, new RegExp(names.b));
    } finally {
      await only.stop();
    }
  });
});
