import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  ALERT_TYPES,
  ATTEMPT_OUTCOMES,
  DELIVERY_STATUSES,
  EMAIL_STATES,
  HEALTH_STATUSES,
  HOLD_REASONS,
  PAUSE_CAUSES,
  STORED_DELIVERY_STATUSES,
  SYSTEM_EVENT_TYPES,
  UNSENT_STATUSES,
  WAITING_STATUSES,
} from "../../src/policy/statuses.js";
import { holdReason, type HoldFacts } from "../../src/policy/hold-reason.js";

// The statuses are named once in src/policy/statuses.ts; the database holds the same sets with
// CHECK constraints (migrations/0005_checks.sql) and the partial indexes of 0001 list the waiting ones.

const MIGRATIONS = fileURLToPath(new URL("../../migrations/", import.meta.url));
const read = (name: string) => readFileSync(MIGRATIONS + name, "utf8");

/** The values of `CHECK (column IN ('a', 'b'))` for `table`.`column` in the migration's SQL. */
function checkList(sql: string, table: string, column: string): string[] {
  const m = new RegExp(`ALTER TABLE ${table} ADD CONSTRAINT \\w+\\s+CHECK \\(${column} IN \\(([^)]*)\\)\\)`).exec(sql);
  assert.ok(m, `no CHECK on ${table}.${column}`);
  return [...m[1]!.matchAll(/'([^']*)'/g)].map((x) => x[1]!);
}

describe("statuses", () => {
  test("each CHECK constraint lists exactly the values named in statuses.ts", () => {
    const sql = read("0005_checks.sql");
    assert.deepEqual(checkList(sql, "deliveries", "status"), [...DELIVERY_STATUSES]);
    assert.deepEqual(checkList(sql, "attempts", "outcome"), [...ATTEMPT_OUTCOMES]);
    assert.deepEqual(checkList(sql, "destinations", "health_status"), [...HEALTH_STATUSES]);
    assert.deepEqual(checkList(sql, "destinations", "pause_cause"), [...PAUSE_CAUSES]);
    // alerts.type was widened since (0009: delivery.dead; 0013: the backlog alerts): the latest list is checked below.
    assert.deepEqual(checkList(sql, "alerts", "type"), ALERT_TYPES.slice(0, 3));
    assert.deepEqual(checkList(sql, "alerts", "email_state"), [...EMAIL_STATES]);
    assert.equal([...sql.matchAll(/ADD CONSTRAINT/g)].length, 6, "a new CHECK needs its list compared here");
  });

  test("the latest deliveries.status CHECK lists the stored statuses: delivering is a lease since 0014", () => {
    assert.deepEqual(checkList(read("0014_leases.sql"), "deliveries", "status"), [...STORED_DELIVERY_STATUSES]);
    assert.deepEqual(STORED_DELIVERY_STATUSES, ["queued", "retry_scheduled", "delivered", "dead", "discarded"]);
  });

  test("the latest alerts.type CHECK lists exactly the system event types", () => {
    const widened = readdirSync(MIGRATIONS)
      .filter((f) => f.endsWith(".sql") && /ADD CONSTRAINT alerts_type_check/.test(read(f)))
      .sort();
    assert.deepEqual(widened, ["0005_checks.sql", "0009_delivery_dead.sql", "0013_backlog_alerts.sql"]);
    assert.deepEqual(checkList(read(widened.at(-1)!), "alerts", "type"), [...SYSTEM_EVENT_TYPES]);
  });

  test("the waiting partial indexes of 0001 cover exactly WAITING_STATUSES", () => {
    const sql = read("0001_init.sql");
    const lists = [...sql.matchAll(/WHERE status IN \(([^)]*)\)/g)].map((m) => [...m[1]!.matchAll(/'([^']*)'/g)].map((x) => x[1]));
    assert.equal(lists.length, 2);
    for (const l of lists) assert.deepEqual(l, [...WAITING_STATUSES]);
  });

  test("the unsent partial index of 0018 covers exactly UNSENT_STATUSES", () => {
    const lists = [...read("0018_unsent_index.sql").matchAll(/WHERE status IN \(([^)]*)\)/g)].map((m) =>
      [...m[1]!.matchAll(/'([^']*)'/g)].map((x) => x[1]),
    );
    assert.deepEqual(lists, [[...UNSENT_STATUSES]]);
  });
});

describe("holdReason", () => {
  const none: HoldFacts = {
    status: "queued",
    attempted: false,
    due: true,
    paused: false,
    throttled: false,
    quiet: false,
    behind: false,
    atCap: false,
    rateLimited: false,
  };

  test("nothing holds a due delivery with free capacity", () => {
    assert.equal(holdReason(none), null);
    assert.equal(holdReason({ ...none, status: "retry_scheduled", attempted: true }), null);
  });

  test("the first reason in HOLD_REASONS order wins", () => {
    const all: HoldFacts = {
      ...none,
      due: false,
      paused: true,
      throttled: true,
      quiet: true,
      behind: true,
      atCap: true,
      rateLimited: true,
    };
    assert.equal(holdReason(all), "paused");
    assert.equal(holdReason({ ...all, paused: false }), "throttled");
    assert.equal(holdReason({ ...all, paused: false, throttled: false, due: true }), "quiet_hours");
    assert.equal(holdReason({ ...all, paused: false, throttled: false }), "scheduled");
    assert.equal(holdReason({ ...all, paused: false, throttled: false, attempted: true }), "ordering");
    assert.equal(holdReason({ ...all, paused: false, throttled: false, due: true, quiet: false, behind: false }), "concurrency");
    assert.equal(holdReason({ ...none, rateLimited: true }), "rate_limited");
    // Every reason is reachable, in the listed order.
    const seen = [
      holdReason(all),
      holdReason({ ...all, paused: false }),
      holdReason({ ...all, paused: false, throttled: false, due: true }),
      holdReason({ ...all, paused: false, throttled: false }),
      holdReason({ ...all, paused: false, throttled: false, attempted: true }),
      holdReason({ ...all, paused: false, throttled: false, due: true, quiet: false, behind: false }),
      holdReason({ ...none, rateLimited: true }),
    ];
    assert.deepEqual(seen, [...HOLD_REASONS]);
  });

  test("quiet hours, capacity and the rate limit hold only due work; a retry waiting for its time is not 'scheduled'", () => {
    assert.equal(
      holdReason({ ...none, due: false, attempted: true, status: "retry_scheduled", quiet: true, atCap: true, rateLimited: true }),
      null,
    );
    assert.equal(holdReason({ ...none, due: false, attempted: true, status: "queued" }), null);
  });
});
