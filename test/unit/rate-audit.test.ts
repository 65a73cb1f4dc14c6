import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { auditBucket } from "../../src/policy/rate-audit.js";
import { bucketsFor } from "../../src/policy/token-bucket.js";

const [perSec] = bucketsFor({ max_per_second: 10, burst_capacity: 5 });

test("a burst at capacity then the refill rate is clean", () => {
  const times = [0, 0, 0, 0, 0, 100, 200, 300, 400, 500];
  assert.equal(auditBucket(times, perSec!).worst, null);
});

test("one send too many in a burst is flagged with its window", () => {
  const a = auditBucket([0, 1, 2, 3, 4, 5], perSec!);
  assert.equal(a.offending.length, 1);
  assert.equal(a.worst!.count, 6);
});

test("property: the one-pass audit agrees with checking every window", () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 5000 }), { maxLength: 60 }), (raw) => {
      const t = [...raw].sort((x, y) => x - y);
      let naive = false;
      for (let i = 0; i < t.length; i++) {
        for (let j = i; j < t.length; j++) {
          if (j - i + 1 > perSec!.capacity + perSec!.ratePerMs * (t[j]! - t[i]!) + 1e-9) naive = true;
        }
      }
      return (auditBucket(t, perSec!).worst !== null) === naive;
    }),
  );
});

test("--since takes durations and RFC 3339 times", async () => {
  const { parseSince } = await import("../../src/cli/audit.js");
  const now = Date.parse("2026-01-01T12:00:00Z");
  assert.equal(parseSince("15m", now).toISOString(), "2026-01-01T11:45:00.000Z");
  assert.equal(parseSince("2h", now).toISOString(), "2026-01-01T10:00:00.000Z");
  assert.equal(parseSince("2026-01-01T11:00:00Z", now).toISOString(), "2026-01-01T11:00:00.000Z");
  assert.equal(parseSince(undefined, now).toISOString(), "2026-01-01T11:45:00.000Z");
  assert.throws(() => parseSince("yesterday", now), /--since/);
});
