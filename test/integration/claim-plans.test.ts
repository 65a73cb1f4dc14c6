import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openDb, BEGIN_GENERIC, type Db } from "../../src/db/db.js";
import { migrate } from "../../src/db/migrate.js";
import { insertDestination } from "../../src/db/queries/destinations.js";
import { LEASE_SQL, CLAIMED_STATE_SQL } from "../../src/db/queries/claim.js";
import { finishSql } from "../../src/db/queries/results.js";
import { withDefaults } from "../../src/api/destination-config.js";
import { createTestDatabase } from "../helpers/db.js";

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
    await migrate(db);
    await db.query("INSERT INTO tenants (id, name) VALUES ('ten_plan', 'plans')");
    for (let d = 0; d < 12; d++)
      await insertDestination(db, `dst_plan${d}`, "ten_plan", withDefaults({ url: "https://example.com/h" }), []);
    await db.query(`INSERT INTO events (id, tenant_id, type, payload, occurred_at)
                    SELECT 'evt_plan' || g, 'ten_plan', 'x', '{}', now() FROM generate_series(1, 60000) g`);
    await db.query(`INSERT INTO deliveries (id, tenant_id, destination_id, event_id, status, occurred_at, next_attempt_at)
                    SELECT 'dlv_plan' || g, 'ten_plan', 'dst_plan' || (g % 12), 'evt_plan' || g, 'queued', now(), now()
                      FROM generate_series(1, 60000) g`);
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
    // it on the outside of a nested loop over the results. Session 22's first lease table also
    // joined the results to the deleted leases again: a nested loop over two CTE scans, 30 µs of
    // Postgres CPU per delivery at a batch of ~125.
    interface Node {
      "Node Type": string;
      "Relation Name"?: string;
      "Index Name"?: string;
      Plans?: Node[];
    }
    const plan = await db.tx(
      async (q) => {
        await q.exec(`PREPARE finish_plan(json, json) AS ${finishSql(100)}`);
        const rows = await q.query<{ "QUERY PLAN": { Plan: Node }[] }>(
          `EXPLAIN (FORMAT JSON) EXECUTE finish_plan('[{"destinationId":"dst_plan1","id":"dlv_plan1","leaseToken":"00000000-0000-4000-8000-000000000001","status":"delivered","delaySeconds":null,"failed":false,"error":null,"statusCode":200}]', '[]')`,
        );
        await q.exec("DEALLOCATE finish_plan");
        return rows[0]!["QUERY PLAN"][0]!.Plan;
      },
      { genericPlans: true },
    );
    const nodes: Node[] = [];
    const loopsOverBatches: Node[] = [];
    const walk = (n: Node): void => {
      nodes.push(n);
      const kids = n.Plans ?? [];
      if (n["Node Type"] === "Nested Loop" && kids.every((k) => k["Node Type"] === "CTE Scan")) loopsOverBatches.push(n);
      kids.forEach(walk);
    };
    walk(plan);
    const text = JSON.stringify(plan);
    assert.deepEqual(loopsOverBatches, [], text);
    const scans = nodes.filter((n) => n["Relation Name"] !== undefined && n["Node Type"] !== "ModifyTable");
    assert.deepEqual(
      scans.filter((n) => n["Node Type"] === "Seq Scan").map((n) => n["Relation Name"]),
      [],
      text,
    );
    // No join touches leases: only lookups by key and the delete by row id.
    const leaseScans = scans.filter((n) => n["Relation Name"] === "leases").map((n) => `${n["Node Type"]} ${n["Index Name"] ?? ""}`.trim());
    assert.deepEqual([...new Set(leaseScans)].sort(), ["Index Scan leases_pkey", "Tid Scan"], text);
    const leaseJoins = nodes.filter(
      (n) => n["Node Type"] === "Nested Loop" && (n.Plans ?? []).some((k) => k["Relation Name"] === "leases"),
    );
    assert.deepEqual(leaseJoins, [], text);
    assert.match(text, /"Index Name":"deliveries_pkey"/);
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
});
