import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { DEFAULT_VACUUM_POLICY as P, vacuumPlan, type TableStats } from "../../src/policy/vacuum.js";

// Which tables of the embedded store the janitor vacuums (policy/vacuum.ts).

const count = fc.integer({ min: 0, max: 5_000_000 });
const stats = fc.record({
  table: fc.string({ minLength: 1, maxLength: 12 }),
  own: fc.boolean(),
  live: count,
  dead: count,
  xidAge: fc.integer({ min: 0, max: 2_000_000_000 }),
});
const tables = fc.uniqueArray(stats, { selector: (t) => t.table, maxLength: 30 });

test("a table is vacuumed for its dead rows (Sluice's own) or frozen for its age (any) — and only then", () => {
  fc.assert(
    fc.property(tables, (ts) => {
      const plan = vacuumPlan(ts);
      const byTable = new Map(plan.map((t) => [t.table, t]));
      assert.equal(byTable.size, plan.length, "each table once");
      for (const t of ts) {
        const dead = t.own && t.dead > P.deadBase + P.deadShare * t.live;
        const freeze = t.xidAge > P.freezeAge;
        const task = byTable.get(t.table);
        assert.equal(task !== undefined, dead || freeze, JSON.stringify(t));
        if (task) assert.deepEqual(task, { table: t.table, freeze });
      }
    }),
  );
});

test("Sluice's own tables come first; a system catalog only ever for its age", () => {
  fc.assert(
    fc.property(tables, (ts) => {
      const own = new Map(ts.map((t) => [t.table, t.own]));
      const plan = vacuumPlan(ts);
      const firstSystem = plan.findIndex((t) => !own.get(t.table));
      if (firstSystem >= 0) assert.ok(plan.slice(firstSystem).every((t) => !own.get(t.table)));
      for (const t of plan) if (!own.get(t.table)) assert.deepEqual(t, { table: t.table, freeze: true });
    }),
  );
});

test("the thresholds: 50 + 5 % of the live rows dead, 100 M transactions", () => {
  const t = (x: Partial<TableStats>): TableStats => ({ table: "deliveries", own: true, live: 10_000, dead: 0, xidAge: 0, ...x });
  assert.deepEqual(vacuumPlan([t({ dead: 550 })]), []);
  assert.deepEqual(vacuumPlan([t({ dead: 551 })]), [{ table: "deliveries", freeze: false }]);
  assert.deepEqual(vacuumPlan([t({ xidAge: 100_000_001, own: false, table: "pg_class" })]), [{ table: "pg_class", freeze: true }]);
  assert.deepEqual(vacuumPlan([t({ dead: 10_000, own: false, table: "pg_class" })]), []);
});
