import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openDb, BEGIN_GENERIC, type Db, type Queryable, type TxQueryable } from "../../src/db/db.js";
import { migrate } from "../../src/db/migrate.js";
import { planNodes, rowsRead, type PlanNode } from "../helpers/plans.js";
import { insertDestination } from "../../src/db/queries/destinations.js";
import { LEASE_SQL, CLAIMED_STATE_SQL } from "../../src/db/queries/claim.js";
import { finishSql } from "../../src/db/queries/results.js";
import { insertPublished, listEvents } from "../../src/db/queries/events.js";
import { listDeliveries } from "../../src/db/queries/deliveries.js";
import { heldGroupsOn } from "../../src/db/queries/stats.js";
import { tableStats } from "../../src/db/queries/maintenance.js";
import { vacuumOnce } from "../../src/dispatch/janitor.js";
import { waitFor } from "../helpers/wait-for.js";
import { withDefaults } from "../../src/api/destination-config.js";
import { createTestDatabase, openTestStore } from "../helpers/db.js";
import { WAITING_STATUSES, type DeliveryStatus } from "../../src/policy/statuses.js";

// The claim runs on generic plans (db.ts TxOptions.genericPlans), which cannot see how small a
// claim's batch is. With statistics on a table where a few destinations hold big backlogs, the
// lease statement once hashed the whole deliveries table to update a dozen rows; found by
// `npm run bench:adaptive`. Its plan must look rows up by index, whatever the table's size.

describe("the claim's plans on server Postgres, with statistics", () => {
  let db: Db;
  let drop: () => Promise<void>;
  before(async () => {
    const t = await createTestDatabase();
    drop = () => t.drop();
    db = await openDb({ databaseUrl: t.url });
    await seed(db, 12, 60_000, "'dst_plan' || (g % 12)");
    await db.query("ANALYZE");
  });
  after(async () => {
    await db?.close();
    await drop?.();
  });

  test("the lease statement's generic plan finds the rows it leases by index, not by scanning deliveries", async () => {
    const plan = await db.tx(
      async (q) => {
        await q.exec(`PREPARE lease_plan(text[], int[], bool[], int[], bool[], uuid) AS ${LEASE_SQL}`);
        const rows = await q.query<{ "QUERY PLAN": string }>(
          `EXPLAIN EXECUTE lease_plan(ARRAY['dst_plan1','dst_plan2'], ARRAY[5,5], ARRAY[false,false], ARRAY[20,20], ARRAY[false,false],
                                      gen_random_uuid())`,
        );
        await q.exec("DEALLOCATE lease_plan");
        return rows.map((r) => r["QUERY PLAN"]).join("\n");
      },
      { genericPlans: true },
    );
    assert.doesNotMatch(plan, /Seq Scan on (deliveries|leases)/, plan);
    assert.doesNotMatch(plan, /Hash Join|Merge Join/, plan);
    // It reads each delivery once, through the waiting index (it no longer updates deliveries,
    // and no longer reads back the ones it leased by primary key), and each event by key.
    assert.match(plan, /Index Scan using deliveries_waiting_idx on deliveries dl/, plan);
    assert.doesNotMatch(plan, /on deliveries d\b/, plan);
    assert.match(plan, /Index Scan using events_pkey on events e/, plan);
    assert.match(plan, /Index Only Scan using leases_pkey on leases|Index Scan using leases_pkey on leases/, plan);
  });

  test("the claim's state read takes the locked ids from the transaction's setting and reads each destination by key", async () => {
    const plan = await db.tx(
      async (q) => {
        // What the lock statement leaves behind it, in the same transaction.
        await q.query("SELECT set_config('sluice.claimed', '{dst_plan1,dst_plan2}', true)");
        await q.exec(`PREPARE state_plan AS ${CLAIMED_STATE_SQL}`);
        const rows = await q.query<{ "QUERY PLAN": string }>("EXPLAIN EXECUTE state_plan");
        const read = await q.query<{ id: string; inflight: number }>("EXECUTE state_plan");
        await q.exec("DEALLOCATE state_plan");
        return { text: rows.map((r) => r["QUERY PLAN"]).join("\n"), ids: read.map((r) => r.id) };
      },
      { genericPlans: true },
    );
    assert.deepEqual(plan.ids, ["dst_plan1", "dst_plan2"]);
    assert.doesNotMatch(plan.text, /Seq Scan/, plan.text);
    assert.doesNotMatch(plan.text, /Hash Join|Merge Join/, plan.text);
    assert.match(plan.text, /Index Scan using destinations_pkey on destinations d/, plan.text);
  });

  test("the write-back's generic plan looks leases up by key and joins only deliveries, by key", async () => {
    // Planned here with leases empty (as after an idle start): a join to leases then put a scan of
    // it on the outside of a nested loop over the results. An earlier write-back also
    // joined the results to the deleted leases again: a nested loop over two CTE scans, 30 µs of
    // Postgres CPU per delivery at a batch of ~125.
    await assertFinishPlanByKey(db);
  });

  test("the settings ride along with BEGIN, for this transaction only", async () => {
    assert.match(BEGIN_GENERIC, /^BEGIN; /);
    const inside = await db.tx(async (q) => (await q.query<{ h: string }>("SELECT current_setting('enable_hashjoin') AS h"))[0]!.h, {
      genericPlans: true,
    });
    const outside = (await db.query<{ h: string }>("SELECT current_setting('enable_hashjoin') AS h"))[0]!.h;
    assert.deepEqual([inside, outside], ["off", "on"]);
    assert.match(BEGIN_GENERIC, /SET LOCAL enable_seqscan = off/);
  });

  test("the claim's and write-back's statements are never JIT-compiled, however costly their plans look", async () => {
    // jit_above_cost 0 stands for an estimate that passed the default 100,000: at 100,000
    // destinations, with a bloated lease table analyzed, the claim's state read was estimated at
    // 167,000 and spent 39 ms of its 77 ms compiling (bench:scale).
    const explain = async (genericPlans: boolean) =>
      db.tx(
        async (q) => {
          await q.exec("SET LOCAL jit_above_cost = 0");
          await q.query("SELECT set_config('sluice.claimed', '{dst_plan1,dst_plan2}', true)");
          const rows = await q.query<{ "QUERY PLAN": { JIT?: unknown }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIMED_STATE_SQL}`);
          const jit = (await q.query<{ jit: string }>("SELECT current_setting('jit') AS jit"))[0]!.jit;
          return { jit, compiled: rows[0]!["QUERY PLAN"][0]!.JIT !== undefined };
        },
        { genericPlans },
      );
    assert.deepEqual(await explain(true), { jit: "off", compiled: false });
    // Outside those transactions the server's own setting stands. Where this Postgres can JIT
    // (Debian's has LLVM), the same statement is compiled: the assertion above could fail.
    const available = (await db.query<{ ok: boolean }>("SELECT pg_jit_available() AS ok"))[0]!.ok;
    const plain = await explain(false);
    assert.equal(plain.jit, "on");
    assert.equal(plain.compiled, available);
  });
});

// The embedded store has no autovacuum: its tables have statistics once the janitor has analyzed
// them (policy/vacuum.ts), and none before. Without them the write-back once looked each result's
// delivery up through a waiting-only partial index by destination, filtering for the id: a walk
// over the destination's whole backlog per result (300 ms for 100 results at a backlog of 20,000).
// One slow destination's backlog slowed every write-back of the one session.
describe("the embedded store's plans, before and after the janitor analyzes its tables", () => {
  let db: Db;
  before(async () => {
    db = await openDb({ dataDir: "memory://claim-plans" });
    // A backlog of 20,000 on one destination, as a slow one builds up.
    await seed(db, 3, 20_000, "'dst_plan1'");
    await db.query("VACUUM deliveries"); // sizes known, no statistics: as before the janitor's first round
  });
  after(async () => db?.close());

  test("looks each result's delivery up by key, whatever its destination's backlog", async () => {
    await assertFinishPlanByKey(db);
  });

  // Without statistics Postgres guesses that `tenant_id = $1` keeps 0.5 % of a table; with one
  // tenant owning every row the API's reads then read the whole tenant index into a bitmap, or
  // sorted every row of the tenant for a page: 15–580 ms a page at 300,000 deliveries.
  test("once the janitor has analyzed the tables, the API's reads read about a page of rows, however many the tenant has", async () => {
    await waitFor(async () => ((await tableStats(db)).find((t) => t.table === "deliveries")?.modified ?? 0) >= 20_000, {
      timeoutMs: 5_000,
    });
    const done = await vacuumOnce(db);
    const analyzed = done.filter((d) => d.task.analyze).map((d) => d.task.table);
    for (const table of ["deliveries", "events"]) assert.ok(analyzed.includes(table), JSON.stringify(done));
    const reads: [string, string, (q: Queryable) => Promise<unknown>][] = [
      ["deliveries", "a destination's deliveries", (q) => listDeliveries(q, "ten_plan", { destinationId: "dst_plan1" }, 100, null)],
      ["deliveries", "an event's deliveries", (q) => listDeliveries(q, "ten_plan", { eventId: "evt_plan7" }, 100, null)],
      ["deliveries", "the queued deliveries", (q) => listDeliveries(q, "ten_plan", { statuses: ["queued"] }, 100, null)],
      ["deliveries", "the tenant's deliveries", (q) => listDeliveries(q, "ten_plan", {}, 100, null)],
      [
        "events",
        "the events of a time range",
        (q) => listEvents(q, "ten_plan", { since: new Date(0), until: new Date(Date.now() + 60_000) }, 100, null),
      ],
      ["events", "the events of a type", (q) => listEvents(q, "ten_plan", { type: "x" }, 100, null)],
    ];
    for (const [table, what, read] of reads) {
      const plan = await explainAnalyze(db, read);
      const rows = rowsRead(plan, table);
      assert.ok(rows <= 250, `${what}: ${rows} rows of ${table} read for a page of 100 — ${JSON.stringify(plan)}`);
    }
    await assertFinishPlanByKey(db);
  });

  // Without statistics the publish's wake-up of its destinations went through the partial index
  // of live destinations, guessed to hold a handful, and compared each of the tenant's
  // destinations with each of the batch's: 1.15 s per batch at 20,000 destinations. The janitor
  // analyzes destinations (policy/vacuum.ts); then it looks each one up by key.
  test("once the janitor has analyzed destinations, a publish wakes its destinations by key, whatever their number", async () => {
    const cols = (
      await db.query<{ c: string }>(
        `SELECT string_agg(quote_ident(column_name), ', ') AS c FROM information_schema.columns
          WHERE table_name = 'destinations' AND column_name <> 'id'`,
      )
    )[0]!.c;
    await db.query(`INSERT INTO destinations (id, ${cols})
                    SELECT 'dst_many' || lpad(g::text, 5, '0'), ${cols} FROM destinations, generate_series(1, 20000) g WHERE id = 'dst_plan0'`);
    // The counters reach the statistics views within about a second.
    await waitFor(async () => ((await tableStats(db)).find((t) => t.table === "destinations")?.modified ?? 0) >= 20_000, {
      timeoutMs: 5_000,
    });
    const done = await vacuumOnce(db);
    assert.ok(
      done.some((d) => d.task.table === "destinations" && d.task.analyze),
      JSON.stringify(done),
    );
    // The publish's statement for 1,000 events to 100 of them, as the API writes it.
    const events = Array.from({ length: 1000 }, (_, i) => ({
      id: `evt_many${i}`,
      type: "x",
      payload: "{}",
      occurredAt: null,
      deliverAt: null,
    }));
    const deliveries = events.map((e, i) => ({
      id: `dlv_many${i}`,
      destinationId: `dst_many${String(1 + (i % 100) * 7).padStart(5, "0")}`,
      eventId: e.id,
      occurredAt: null,
      deliverAt: null,
      quietHold: false,
    }));
    const publish = (q: Queryable) => insertPublished(q, "ten_plan", null, events, deliveries, null);
    for (const generic of [false, true]) {
      const plan = await explainAnalyze(db, publish, { generic });
      assert.deepEqual(
        [...new Set(scansOf(plan, "destinations"))],
        ["Index Scan destinations_pkey"],
        `${generic ? "generic" : "custom"}: ${JSON.stringify(plan)}`,
      );
    }
  });
});

// A status filter across a tenant walked the tenant's deliveries newest first until it had a page:
// for a status few rows have — the dead letters, what is in flight, what waits on a store that
// has delivered the rest — that is every row the tenant has (38 ms at 300,000 on a server, growing
// with the store). Each such status is now read through a partial index that holds it, under the
// custom plans of a statement's first uses and the generic plan a prepared one may settle on.
for (const backend of ["embedded", "server"] as const) {
  describe(`a status few of a tenant's deliveries have is read through an index, not by walking the tenant (${backend})`, () => {
    let db: Db;
    let close: () => Promise<void>;
    before(async () => {
      ({ db, close } = await openTestStore(backend));
      await seed(db, 3, 20_000, "'dst_plan' || (g % 3)");
      // All delivered but a few that wait and one in flight; nothing dead or discarded.
      await db.query("UPDATE deliveries SET status = 'delivered', finished_at = now() WHERE id NOT LIKE '%000'");
      await db.query(`INSERT INTO leases (destination_id, delivery_id, token, expires_at)
                      SELECT destination_id, id, gen_random_uuid(), now() + interval '1 minute' FROM deliveries WHERE id = 'dlv_plan1000'`);
      // As autovacuum (or the embedded janitor) leaves them: the waiting indexes rid of the
      // delivered rows' old entries, and statistics to plan with.
      await db.query("VACUUM ANALYZE");
    });
    after(async () => close?.());

    const reads: [string, readonly DeliveryStatus[], number][] = [
      ["queued", ["queued"], 19],
      ["held", WAITING_STATUSES, 19],
      ["retry_scheduled", ["retry_scheduled"], 0],
      ["delivering", ["delivering"], 1],
      ["dead", ["dead"], 0],
      ["discarded", ["discarded"], 0],
    ];
    for (const [name, statuses, n] of reads) {
      test(`${name}: the page is right and about a page of rows is read, on custom and generic plans`, async () => {
        const read = (q: Queryable) => listDeliveries(q, "ten_plan", { statuses }, 100, null);
        assert.equal((await read(db)).length, n);
        for (const generic of [false, true]) {
          const plan = await explainAnalyze(db, read, { generic });
          const rows = rowsRead(plan, "deliveries");
          assert.ok(rows <= 250, `${generic ? "generic" : "custom"}: ${rows} rows of deliveries read — ${JSON.stringify(plan)}`);
        }
      });
    }
  });
}

/** A tenant, `destinations` destinations and `deliveries` waiting deliveries with their events; delivery g goes to `destinationOf` (SQL of g). */
// The held counts (the overview's GET /v1/stats, the sluice_held gauge, the minute's backlog
// sample) read every waiting delivery and leave out those in flight, by a NOT EXISTS against
// `leases`. Once `leases` was analyzed as empty, PGlite made that a nested loop that rescanned it
// once per delivery: 2.3 s at 1,000,000 waiting. There, nested loops are now off for that
// statement and the leases are read once (heldGroupsOn); a server plans as it likes.
for (const backend of ["embedded", "server"] as const) {
  describe(`the held counts leave out what is in flight; on the embedded store they read the leases once (${backend})`, () => {
    let db: Db;
    let close: () => Promise<void>;
    before(async () => {
      ({ db, close } = await openTestStore(backend));
      await seed(db, 3, 20_000, "'dst_plan' || (g % 3)");
      await db.query(`INSERT INTO leases (destination_id, delivery_id, token, expires_at)
                      SELECT destination_id, id, gen_random_uuid(), now() + interval '1 minute' FROM deliveries WHERE id IN ('dlv_plan3', 'dlv_plan4')`);
      await db.query("VACUUM ANALYZE");
    });
    after(async () => close?.());

    test("every waiting delivery but the two in flight is counted", async () => {
      const groups = await db.tx((q) => heldGroupsOn(db.kind, q, [], null));
      assert.equal(
        groups.reduce((n, g) => n + g.n, 0),
        20_000 - 2,
      );
    });

    if (backend === "embedded")
      test("with nothing in flight and leases analyzed empty, no scan of leases runs more than once", async () => {
        await db.query("DELETE FROM leases");
        await db.query("VACUUM ANALYZE leases");
        // Its statements as it sends them, in its transaction, the grouping one explained.
        const plan = await db.tx(async (q) => {
          let explained: PlanNode | null = null;
          const explaining: TxQueryable = {
            ...q,
            query: async <R>(sql: string, params?: unknown[]) => {
              if (!sql.trimStart().startsWith("WITH")) return q.query<R>(sql, params);
              const rows = await q.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
              explained = rows[0]!["QUERY PLAN"][0]!.Plan;
              return [];
            },
          };
          await heldGroupsOn(db.kind, explaining, [], null);
          return explained!;
        });
        const loops = planNodes(plan)
          .filter((n) => n["Relation Name"] === "leases" || n["Index Name"]?.startsWith("leases_"))
          .map((n) => n["Actual Loops"] ?? 1);
        assert.ok(loops.length > 0 && Math.max(...loops) === 1, `loops over leases: ${JSON.stringify(loops)} — ${JSON.stringify(plan)}`);
      });
  });
}

async function seed(db: Db, destinations: number, deliveries: number, destinationOf: string): Promise<void> {
  await migrate(db);
  await db.query("INSERT INTO tenants (id, name) VALUES ('ten_plan', 'plans')");
  for (let d = 0; d < destinations; d++)
    await insertDestination(db, `dst_plan${d}`, "ten_plan", withDefaults({ url: "https://example.com/h" }), []);
  await db.query(`INSERT INTO events (id, tenant_id, type, payload, occurred_at)
                  SELECT 'evt_plan' || g, 'ten_plan', 'x', '{}', now() FROM generate_series(1, ${deliveries}) g`);
  await db.query(`INSERT INTO deliveries (id, tenant_id, destination_id, event_id, status, occurred_at, next_attempt_at)
                  SELECT 'dlv_plan' || g, 'ten_plan', ${destinationOf}, 'evt_plan' || g, 'queued', now(), now()
                    FROM generate_series(1, ${deliveries}) g`);
}

/** How a plan reads `table`: each scan as "node type [index]" (the node writing to it left out). */
const scansOf = (plan: PlanNode, table: string): string[] =>
  planNodes(plan)
    .filter((n) => n["Relation Name"] === table && n["Node Type"] !== "ModifyTable")
    .map((n) => `${n["Node Type"]} ${n["Index Name"] ?? ""}`.trim());

/**
 * The one statement `send` sends, as it sends it: captured by a Queryable that only records (and
 * answers the one row the publish checks, `ok`). Its plan is then read on the real store.
 */
async function statementOf(send: (q: Queryable) => Promise<unknown>): Promise<{ sql: string; params: unknown[] }> {
  let sent: { sql: string; params: unknown[] } | null = null;
  const recorder: Queryable = {
    query: async <R>(sql: string, params: unknown[] = []) => ((sent = { sql, params }), [{ ok: true }] as R[]),
    exec: async () => undefined,
  };
  await send(recorder);
  return sent!;
}

/**
 * EXPLAIN ANALYZE of the one statement `read` sends, as it sends it: on a custom plan, or with
 * `generic` on the generic plan a prepared statement may settle on. Rolled back after, so a
 * statement that writes leaves nothing behind.
 */
async function explainAnalyze(db: Db, read: (q: Queryable) => Promise<unknown>, { generic = false } = {}): Promise<PlanNode> {
  const { sql, params } = await statementOf(read);
  return db.tx(async (q) => {
    await q.exec("SAVEPOINT plan");
    let rows: { "QUERY PLAN": { Plan: PlanNode }[] }[];
    if (!generic) rows = await q.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
    else {
      await q.exec("SET LOCAL plan_cache_mode = force_generic_plan");
      await q.exec(`PREPARE plan_of AS ${sql}`);
      rows = await q.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE plan_of(${params.map(sqlLiteral).join(", ")})`);
      await q.exec("DEALLOCATE plan_of");
    }
    await q.exec("ROLLBACK TO SAVEPOINT plan");
    return rows[0]!["QUERY PLAN"][0]!.Plan;
  });
}

/** A statement's parameter as an SQL literal: strings, numbers, string arrays and nulls. */
function sqlLiteral(x: unknown): string {
  if (x === null) return "NULL";
  if (typeof x === "number") return x.toString();
  if (Array.isArray(x)) return `'{${x.join(",")}}'`;
  return `'${(x as string).replace(/'/g, "''")}'`;
}

/**
 * The write-back's generic plan, as the worker runs it, for one result on dst_plan1: leases only
 * looked up by key (never joined), no nested loop over two batches, no sequential scan, and the
 * delivery found by its primary key — not through a waiting-only index by destination.
 */
async function assertFinishPlanByKey(db: Db): Promise<void> {
  const plan = await db.tx(
    async (q) => {
      await q.exec(`PREPARE finish_plan(json, json, text[]) AS ${finishSql(100)}`);
      const rows = await q.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(
        `EXPLAIN (FORMAT JSON) EXECUTE finish_plan('[{"destinationId":"dst_plan1","id":"dlv_plan1","leaseToken":"00000000-0000-4000-8000-000000000001","status":"delivered","delaySeconds":null,"failed":false,"error":null,"statusCode":200}]', '[]', '{queued,retry_scheduled}')`,
      );
      await q.exec("DEALLOCATE finish_plan");
      return rows[0]!["QUERY PLAN"][0]!.Plan;
    },
    { genericPlans: true },
  );
  const nodes = planNodes(plan);
  const loopsOverBatches = nodes.filter(
    (n) => n["Node Type"] === "Nested Loop" && (n.Plans ?? []).every((k) => k["Node Type"] === "CTE Scan"),
  );
  const text = JSON.stringify(plan);
  assert.deepEqual(loopsOverBatches, [], text);
  const scans = nodes.filter((n) => n["Relation Name"] !== undefined && n["Node Type"] !== "ModifyTable");
  assert.deepEqual(
    scans.filter((n) => n["Node Type"] === "Seq Scan").map((n) => n["Relation Name"]),
    [],
    text,
  );
  // No join touches leases: only lookups by key and the delete by row id.
  assert.deepEqual([...new Set(scansOf(plan, "leases"))].sort(), ["Index Scan leases_pkey", "Tid Scan"], text);
  const leaseJoins = nodes.filter((n) => n["Node Type"] === "Nested Loop" && (n.Plans ?? []).some((k) => k["Relation Name"] === "leases"));
  assert.deepEqual(leaseJoins, [], text);
  const deliveryScans = scans.filter((n) => n["Relation Name"] === "deliveries").map((n) => n["Index Name"] ?? n["Node Type"]);
  assert.deepEqual(deliveryScans, ["deliveries_pkey"], text);
}
