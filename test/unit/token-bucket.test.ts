import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { bucketsFor, grantBuckets, available, spend, nextTokenAtMs, refill, type BucketState } from "../../src/policy/token-bucket.js";

describe("token bucket", () => {
  test("capacities follow the contract: burst for the finest window, the other window its own limit", () => {
    assert.deepEqual(
      bucketsFor({ max_per_second: 10 }).map((b) => b.capacity),
      [10],
    );
    assert.deepEqual(
      bucketsFor({ max_per_second: 10, burst_capacity: 25 }).map((b) => b.capacity),
      [25],
    );
    assert.deepEqual(
      bucketsFor({ max_per_minute: 100, burst_capacity: 7 }).map((b) => b.capacity),
      [7],
    );
    assert.deepEqual(
      bucketsFor({ max_per_second: 10, max_per_minute: 100, burst_capacity: 25 }).map((b) => b.capacity),
      [25, 100],
    );
    assert.deepEqual(bucketsFor(null), []);
  });

  test("a new bucket starts full, spends, and refills at its rate", () => {
    const b = bucketsFor({ max_per_second: 10 });
    assert.equal(available(b, [], 0, 100), 10);
    const s = spend(b, [], 0, 10);
    assert.equal(available(b, s, 0, 100), 0);
    assert.equal(nextTokenAtMs(b, s, 0), 100);
    assert.equal(available(b, s, 100, 100), 1);
    assert.equal(available(b, s, 1000, 100), 10);
    assert.equal(available(b, s, 60_000, 100), 10, "never above capacity");
  });

  test("a clock stepping back mints nothing", () => {
    const b = bucketsFor({ max_per_second: 10 });
    const s = spend(b, [], 1000, 10);
    assert.equal(available(b, s, 0, 100), 0);
  });

  // The invariant the dispatcher relies on: whatever the arrival pattern, in any window of
  // length L the sends granted never exceed capacity + rate × L, for every bucket.
  test("property: no window ever exceeds burst + rate × length", () => {
    fc.assert(
      fc.property(
        fc
          .record({
            max_per_second: fc.option(fc.integer({ min: 1, max: 200 }), { nil: undefined }),
            max_per_minute: fc.option(fc.integer({ min: 1, max: 3000 }), { nil: undefined }),
            burst_capacity: fc.option(fc.integer({ min: 1, max: 300 }), { nil: undefined }),
          })
          .filter((l) => l.max_per_second !== undefined || l.max_per_minute !== undefined),
        fc.array(fc.record({ gapMs: fc.integer({ min: 0, max: 3000 }), want: fc.integer({ min: 0, max: 400 }) }), {
          minLength: 1,
          maxLength: 200,
        }),
        (limit, arrivals) => {
          const buckets = bucketsFor(limit);
          let states: (BucketState | undefined)[] = [];
          let now = 1_000_000;
          const sends: { at: number; n: number }[] = [];
          for (const a of arrivals) {
            now += a.gapMs;
            const n = available(buckets, states, now, a.want);
            states = spend(buckets, states, now, n);
            if (n > 0) sends.push({ at: now, n });
          }
          for (const b of buckets) {
            for (let i = 0; i < sends.length; i++) {
              let total = 0;
              for (let j = i; j < sends.length; j++) {
                total += sends[j]!.n;
                const length = sends[j]!.at - sends[i]!.at;
                if (total > b.capacity + b.ratePerMs * length + 1e-6) return false;
              }
            }
          }
          return true;
        },
      ),
      { numRuns: 300 },
    );
  });

  // The receiver-side form: every granted send arrives up to J ms late (each by its own amount),
  // and still no arrival window exceeds the configured burst + rate × length — for any jitter up
  // to the headroom the grant buckets hold back (J, capped at half the burst's worth of time).
  test("property: with send-jitter headroom, arrivals delayed by up to J stay within burst + rate × length", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.array(fc.record({ gapMs: fc.integer({ min: 0, max: 1500 }), want: fc.integer({ min: 0, max: 300 }) }), {
          minLength: 1,
          maxLength: 120,
        }),
        fc.infiniteStream(fc.oneof(fc.constantFrom(0, 1), fc.double({ min: 0, max: 1, noNaN: true }))),
        (rate, burst, jitterMs, arrivals, delays) => {
          const limit = { max_per_second: rate, burst_capacity: burst };
          const [nominal] = bucketsFor(limit);
          const buckets = grantBuckets(limit, jitterMs);
          const covered = Math.min(jitterMs, (nominal!.capacity - buckets[0]!.capacity) / nominal!.ratePerMs);
          let states: (BucketState | undefined)[] = [];
          let now = 1_000_000;
          const at: number[] = [];
          for (const a of arrivals) {
            now += a.gapMs;
            const n = available(buckets, states, now, a.want);
            states = spend(buckets, states, now, n);
            const late = delays.next().value * covered; // a claim's grant goes out together
            for (let k = 0; k < n; k++) at.push(now + late);
          }
          at.sort((x, y) => x - y);
          for (let i = 0; i < at.length; i++) {
            for (let j = i; j < at.length; j++) {
              if (j - i + 1 > nominal!.capacity + nominal!.ratePerMs * (at[j]! - at[i]!) + 1e-6) return false;
            }
          }
          return true;
        },
      ),
      { numRuns: 200 },
    );
  });

  test("grantBuckets holds back J ms of tokens, at most half the burst, never the last token", () => {
    assert.deepEqual(
      grantBuckets({ max_per_second: 50, burst_capacity: 50 }, 250).map((b) => b.capacity),
      [37.5],
    );
    assert.deepEqual(
      grantBuckets({ max_per_second: 1000, burst_capacity: 10 }, 250).map((b) => b.capacity),
      [5],
    );
    assert.deepEqual(
      grantBuckets({ max_per_second: 10, burst_capacity: 1 }, 250).map((b) => b.capacity),
      [1],
    );
    assert.deepEqual(
      grantBuckets({ max_per_second: 50 }, 0).map((b) => b.capacity),
      [50],
    );
    assert.deepEqual(
      grantBuckets({ max_per_minute: 600 }, 250).map((b) => b.capacity),
      [597.5],
    );
  });

  test("property: a backlogged bucket is used at its full rate (no tokens wasted)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 50 }), (rate, stepMs) => {
        const buckets = bucketsFor({ max_per_second: rate });
        let states: (BucketState | undefined)[] = [];
        let sent = 0;
        let last = 0;
        for (let now = 0; now <= 10_000; now += stepMs) {
          const n = available(buckets, states, now, 1_000_000);
          states = spend(buckets, states, now, n);
          sent += n;
          last = now;
        }
        // Everything minted by the last step went out but for less than one whole token.
        const minted = rate + (rate * last) / 1000;
        return sent > minted - 1 - 1e-6 && sent <= minted + 1e-6;
      }),
    );
  });

  test("nextTokenAtMs is the first instant a whole token exists in every bucket", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 6000 }), fc.integer({ min: 0, max: 5000 }), (ps, pm, t) => {
        const buckets = bucketsFor({ max_per_second: ps, max_per_minute: pm });
        const drained = spend(buckets, [], 0, available(buckets, [], 0, 1e9));
        const at = nextTokenAtMs(buckets, drained, t);
        if (available(buckets, drained, at, 1) !== 1) return false;
        return at === t || available(buckets, drained, at - 1, 1) === 0;
      }),
    );
  });

  test("refill is monotone in time", () => {
    const [b] = bucketsFor({ max_per_second: 3 });
    let s = refill(b!, { tokens: 0, atMs: 0 }, 0);
    for (let t = 0; t < 2000; t += 37) {
      const next = refill(b!, s, t);
      assert.ok(next.tokens >= s.tokens - 1e-9);
      s = next;
    }
  });
});
