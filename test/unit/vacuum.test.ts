import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { DEFAULT_VACUUM_POLICY as P, SERVER_VACUUM_POLICY as S, vacuumPlan, type TableStats } from "../../src/policy/vacuum.js";

// Which tables the janitor vacuums (policy/vacuum.ts): every table of the embedded store, and on a
// server the small hot ones between autovacuum's rounds.

const count = fc.integer({ min: 0, max: 5_000_000 });
const statsNamed = (table: fc.Arbitrary<string>): fc.Arbitrary<TableStats> =>
  fc.record({ table, own: fc.boolean(), live: count, dead: count, modified: count, xidAge: fc.integer({ min: 0, max: 2_000_000_000 }) });
const stats = statsNamed(fc.oneof(fc.constant("destinations"), fc.string({ minLength: 1, maxLength: 12 })));
const tables = fc.uniqueArray(stats, { selector: (t) => t.table, maxLength: 30 });
// Names the server policy knows among arbitrary ones.
const serverTables = fc.uniqueArray(
  statsNamed(fc.oneof(fc.constantFrom("leases", "destinations", "deliveries", "attempts"), fc.string({ minLength: 1, maxLength: 12 }))),
  { selector: (t) => t.table, maxLength: 30 },
);

test("a table is vacuumed for its dead rows (Sluice's own), frozen for its age (any) or analyzed (Sluice's own) — and only then", () => {
  fc.assert(
    fc.property(tables, (ts) => {
      const plan = vacuumPlan(ts);
      const byTable = new Map(plan.map((t) => [t.table, t]));
      assert.equal(byTable.size, plan.length, "each table once");
      for (const t of ts) {
        const dead = t.own && t.dead > P.deadBase + P.deadShare * t.live;
        const freeze = t.xidAge > P.freezeAge;
        const analyze = t.own && t.modified > P.analyzeBase + P.analyzeShare * t.live;
        const task = byTable.get(t.table);
        assert.equal(task !== undefined, dead || freeze || analyze, JSON.stringify(t));
        if (task) assert.deepEqual(task, { table: t.table, vacuum: dead || freeze, freeze, analyze });
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
      for (const t of plan) if (!own.get(t.table)) assert.deepEqual(t, { table: t.table, vacuum: true, freeze: true, analyze: false });
    }),
  );
});

test("the thresholds: 50 + 5 % of the live rows dead, 100 M transactions, 50 + 10 % changed since a table was analyzed", () => {
  const t = (x: Partial<TableStats>): TableStats => ({
    table: "deliveries",
    own: true,
    live: 10_000,
    dead: 0,
    modified: 0,
    xidAge: 0,
    ...x,
  });
  assert.deepEqual(vacuumPlan([t({ dead: 550 })]), []);
  assert.deepEqual(vacuumPlan([t({ dead: 551 })]), [{ table: "deliveries", vacuum: true, freeze: false, analyze: false }]);
  assert.deepEqual(vacuumPlan([t({ xidAge: 100_000_001, own: false, table: "pg_class" })]), [
    { table: "pg_class", vacuum: true, freeze: true, analyze: false },
  ]);
  assert.deepEqual(vacuumPlan([t({ dead: 10_000, own: false, table: "pg_class" })]), []);
  // Statistics of every table of Sluice's, alone (no VACUUM) when there are no dead rows to speak of.
  assert.deepEqual(vacuumPlan([t({ modified: 1_050 })]), []);
  assert.deepEqual(vacuumPlan([t({ modified: 1_051 })]), [{ table: "deliveries", vacuum: false, freeze: false, analyze: true }]);
  assert.deepEqual(vacuumPlan([t({ modified: 1_051, dead: 551 })]), [{ table: "deliveries", vacuum: true, freeze: false, analyze: true }]);
  assert.deepEqual(vacuumPlan([t({ table: "pg_class", modified: 1_000_000, own: false })]), []);
  // From a sample of 3,000 rows: short on the embedded store's one session.
  assert.equal(P.statisticsTarget, 10);
});

test("on a server only leases and destinations are vacuumed, for their dead rows, and nothing is frozen (autovacuum's)", () => {
  fc.assert(
    fc.property(serverTables, (ts) => {
      const plan = vacuumPlan(ts, S);
      for (const t of ts) {
        const due = t.own && ["leases", "destinations"].includes(t.table) && t.dead > S.deadBase + S.deadShare * t.live;
        assert.equal(
          plan.some((p) => p.table === t.table),
          due,
          JSON.stringify(t),
        );
      }
      assert.ok(
        plan.every((p) => !p.freeze && !p.analyze),
        "freezing and statistics are autovacuum's",
      );
    }),
  );
  const t = (x: Partial<TableStats>): TableStats => ({ table: "leases", own: true, live: 1_000, dead: 0, modified: 0, xidAge: 0, ...x });
  assert.deepEqual(vacuumPlan([t({ dead: 1_050 })], S), []);
  assert.deepEqual(vacuumPlan([t({ dead: 1_051 })], S), [{ table: "leases", vacuum: true, freeze: false, analyze: false }]);
  assert.deepEqual(vacuumPlan([t({ table: "destinations", modified: 1_000_000 })], S), []);
  assert.deepEqual(vacuumPlan([t({ table: "deliveries", dead: 5_000_000 })], S), []);
  assert.deepEqual(vacuumPlan([t({ dead: 10_000, own: false })], S), []);
});
