import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  DEFAULT_REBUILD_POLICY,
  bytesPerEntryAfterRebuild,
  entriesNow,
  rebuildPlan,
  type IndexStats,
  type RebuildBaseline,
  type RebuildPolicy,
} from "../../src/policy/index-rebuild.js";

// When the janitor rebuilds an index (policy/index-rebuild.ts), over the whole range the catalog
// can report: sizes from empty to a terabyte, reltuples −1 (never counted) to billions, any
// baseline, any age.

const NOW = 1_800_000_000_000;
const name = fc.oneof(
  fc.constantFrom("events_pkey", "deliveries_event_idx", '"Odd name"', "x_ccnew", "x_ccnew1", "x_ccold", '"y_ccnew2"'),
  fc.stringMatching(/^[a-z_]{1,12}$/),
);
const index: fc.Arbitrary<IndexStats> = fc.record({
  index: name,
  table: fc.constantFrom("events", "deliveries"),
  bytes: fc.oneof(fc.constant(0), fc.integer({ min: 8192, max: 2 ** 40 })),
  entries: fc.oneof(fc.constantFrom(-1, 0), fc.double({ min: 1, max: 1e10, noNaN: true })),
  valid: fc.boolean(),
  partial: fc.boolean(),
  tableLive: fc.integer({ min: 0, max: 2e9 }),
  tableDeleted: fc.integer({ min: 0, max: 2e9 }),
  tableCounted: fc.oneof(fc.constantFrom(-1, 0), fc.double({ min: 1, max: 1e10, noNaN: true })),
  liveKnown: fc.boolean(),
});
const indexes = fc.uniqueArray(index, { selector: (i) => i.index, maxLength: 20 });
const baselinesFor = (names: string[]): fc.Arbitrary<RebuildBaseline[]> =>
  fc
    .array(
      fc.record({
        index: names.length ? fc.constantFrom(...names) : name,
        bytesPerEntry: fc.double({ min: 1, max: 10_000, noNaN: true }),
        measuredAtMs: fc.integer({ min: NOW - 30 * 86_400_000, max: NOW }),
      }),
      { maxLength: 20 },
    )
    .map((bs) => [...new Map(bs.map((b) => [b.index, b])).values()]);
const policy: fc.Arbitrary<RebuildPolicy> = fc.record({
  factor: fc.oneof(fc.constant(0), fc.double({ min: 1.2, max: 100, noNaN: true })),
  minBytes: fc.integer({ min: 0, max: 2 ** 30 }),
  minIntervalMs: fc.integer({ min: 0, max: 86_400_000 }),
});
const world = indexes.chain((is) => fc.tuple(fc.constant(is), baselinesFor(is.map((i) => i.index)), policy));

const leftover = (i: IndexStats): boolean => !i.valid && /_cc(new|old)\d*"?$/.test(i.index);

test("leftovers of an interrupted rebuild are dropped first, whatever the policy, and nothing else is dropped", () => {
  fc.assert(
    fc.property(world, ([is, bs, p]) => {
      const plan = rebuildPlan(is, bs, NOW, p);
      const drops = plan.filter((t) => t.kind === "drop").map((t) => t.index);
      assert.deepEqual(
        drops,
        is.filter(leftover).map((i) => i.index),
      );
      assert.deepEqual(
        plan.slice(0, drops.length).map((t) => t.kind),
        drops.map(() => "drop"),
      );
    }),
  );
});

test("an index is rebuilt exactly when big enough, counted, bloated past the factor (or never rebuilt on a turned-over table), not lately", () => {
  fc.assert(
    fc.property(world, ([is, bs, p]) => {
      const plan = rebuildPlan(is, bs, NOW, p);
      const rebuilt = new Map(plan.flatMap((t) => (t.kind === "rebuild" ? [[t.index, t] as const] : [])));
      assert.equal(rebuilt.size, plan.filter((t) => t.kind === "rebuild").length, "each index once");
      for (const i of is) {
        const base = bs.find((b) => b.index === i.index);
        const entries = entriesNow(i);
        const bloat = base ? i.bytes / entries / base.bytesPerEntry : null;
        const candidate =
          p.factor > 0 && i.valid && !leftover(i) && !/_cc(new|old)\d*"?$/.test(i.index) && i.bytes >= p.minBytes && entries > 0;
        // Never rebuilt: left alone until retention has deleted as many rows as its table holds.
        const turnedOver = i.tableDeleted > 0 && i.tableDeleted >= i.tableLive;
        const due = candidate && (base ? NOW - base.measuredAtMs >= p.minIntervalMs && bloat! >= p.factor : turnedOver);
        assert.equal(rebuilt.has(i.index), due, JSON.stringify({ i, base, p }));
        if (due) assert.equal(rebuilt.get(i.index)!.bloat, bloat);
      }
      const kinds = plan.map((t) => t.kind);
      assert.deepEqual(
        kinds,
        [...kinds].sort((a, b) => ["drop", "rebuild"].indexOf(a) - ["drop", "rebuild"].indexOf(b)),
      );
    }),
  );
});

test("the most bytes to win come first: known bloat by bytes given back, then the never rebuilt, largest first", () => {
  fc.assert(
    fc.property(world, ([is, bs, p]) => {
      const rebuilds = rebuildPlan(is, bs, NOW, p).flatMap((t) => (t.kind === "rebuild" ? [t] : []));
      const firstUnknown = rebuilds.findIndex((t) => t.bloat === null);
      if (firstUnknown >= 0)
        assert.ok(
          rebuilds.slice(firstUnknown).every((t) => t.bloat === null),
          "unknown after known",
        );
      for (let k = 1; k < rebuilds.length; k++) {
        const [a, b] = [rebuilds[k - 1]!, rebuilds[k]!];
        if (a.bloat !== null && b.bloat !== null) assert.ok(a.bytes * (1 - 1 / a.bloat) >= b.bytes * (1 - 1 / b.bloat));
        if (a.bloat === null && b.bloat === null) assert.ok(a.bytes >= b.bytes);
      }
    }),
  );
});

test("the defaults: an index at twice its packed size per entry is rebuilt, at 1.9 times or under 16 MB it is not", () => {
  const at = (bytes: number, entries = 1_000_000): IndexStats[] => [
    {
      index: "events_pkey",
      table: "events",
      bytes,
      entries,
      valid: true,
      partial: false,
      tableLive: entries,
      tableDeleted: 0,
      tableCounted: entries,
      liveKnown: true,
    },
  ];
  const base: RebuildBaseline[] = [{ index: "events_pkey", bytesPerEntry: 20, measuredAtMs: NOW - 3_600_000 }];
  assert.equal(rebuildPlan(at(2 * 20 * 1_000_000), base, NOW).length, 1);
  assert.equal(rebuildPlan(at(1.9 * 20 * 1_000_000), base, NOW).length, 0);
  assert.equal(rebuildPlan(at(15 * 1_048_576, 100_000), base, NOW).length, 0, "7.9 times, but under 16 MB");
  assert.equal(rebuildPlan(at(2 * 20 * 1_000_000), [{ ...base[0]!, measuredAtMs: NOW - 4 * 60_000 }], NOW).length, 0, "rebuilt 4 min ago");
  assert.deepEqual(rebuildPlan(at(2 * 20 * 1_000_000), [], NOW), [], "never rebuilt, nothing ever deleted: left alone");
});

test("entries now: a full index counts its table's live rows, a partial one its share of them; neither until the table was counted", () => {
  fc.assert(
    fc.property(index, (i) => {
      const n = entriesNow(i);
      if (!i.liveKnown || !(i.tableLive > 0)) assert.equal(n, i.entries, "statistics reset, or an empty table: the catalog's count");
      else if (!i.partial) assert.equal(n, i.tableLive);
      else if (i.tableCounted > 0 && i.entries > 0) {
        // The index's share of its table at the last count, of the rows live now.
        assert.ok(Math.abs(n / i.tableLive - i.entries / i.tableCounted) <= 1e-9 * Math.max(1, i.entries / i.tableCounted));
      } else assert.equal(n, i.entries);
      assert.ok(!Number.isNaN(n));
      // Right after a rebuild a partial index's own count is exact; a full one is read as it will be measured.
      const after = bytesPerEntryAfterRebuild(i);
      const counted = i.partial ? i.entries : n;
      assert.equal(after, counted > 0 ? i.bytes / counted : null);
    }),
  );
});

test("a table a tenth past its last count: its growth is not read as bloat, and doubling is seen on time", () => {
  // Rebuilt when the table held 600,000 rows, at 40 bytes each; since, 1,000 rows/s into it while
  // retention deleted none: 660,000 live, packed as the rebuild left it, and the catalog says 600,000.
  const base: RebuildBaseline[] = [{ index: "events_pkey", bytesPerEntry: 40, measuredAtMs: NOW - 3_600_000 }];
  const grown: IndexStats = {
    index: "events_pkey",
    table: "events",
    bytes: 660_000 * 40,
    entries: 600_000,
    valid: true,
    partial: false,
    tableLive: 660_000,
    tableDeleted: 0,
    tableCounted: 600_000,
    liveKnown: true,
  };
  const policy = { ...DEFAULT_REBUILD_POLICY, factor: 1.05 };
  assert.deepEqual(rebuildPlan([grown], base, NOW, policy), [], "1.0 times its packed size, not the 1.1 the catalog says");
  // Later, retention deleting as fast as rows come: 660,000 live over twice the pages.
  const doubled = { ...grown, bytes: 2 * 660_000 * 40, entries: 660_000, tableDeleted: 5e6, tableCounted: 660_000 };
  assert.deepEqual(
    rebuildPlan([doubled], base, NOW).map((t) => t.kind === "rebuild" && t.bloat),
    [2],
  );
  // The same index with its statistics lost to a crash: the catalog's count, as before.
  assert.equal(entriesNow({ ...grown, liveKnown: false, tableLive: 12 }), 600_000);
});
