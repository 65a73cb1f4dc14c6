import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  bucketsFor,
  grantBuckets,
  refill,
  available,
  spend,
  nextTokenAtMs,
  msUntilWholeToken,
  type Bucket,
  type BucketState,
} from "../../src/policy/token-bucket.js";
import { BOUNDS } from "../../src/policy/bounds.js";
import { assertAllFinite, clockStepMs, instantMs, rateLimit, stepClock, nextDown } from "../helpers/admitted.js";

// Every rate limit the API admits (src/policy/bounds.ts), every stored bucket state and any clock:
// the buckets' figures stay finite and in range, and the next token is exactly where it says.

const JITTER_MS = fc.oneof(fc.constantFrom(0, 1, 500, 10_000), fc.integer({ min: 0, max: 10_000 })); // SLUICE_RATE_SEND_JITTER_MS

/** Slowest refill any bucket can have: the slowest per-minute rate (adaptive pace never goes below it either). */
const MIN_RATE_PER_MS = BOUNDS.rate_per_minute.min / 60_000;
/** So the longest wait for a token from an empty bucket. */
const MAX_WAIT_MS = Math.ceil(1 / MIN_RATE_PER_MS) + 1;

/** A stored state as the claim writes it: tokens in [0, capacity] (or over it after the limit was lowered), at some instant. */
const storedState = (capacity: number) =>
  fc.record({
    tokens: fc.oneof(fc.constantFrom(0, 1e-9, 0.5, 1 - 1e-9, 1, capacity), fc.double({ min: 0, max: 2 * capacity, noNaN: true })),
    atMs: instantMs,
  });

/** Buckets (as the claim makes them) and a stored state for each. */
const bucketsAndStates = fc
  .tuple(rateLimit, JITTER_MS)
  .map(([limit, jitter]) => ({ limit, jitter, buckets: grantBuckets(limit, jitter) }))
  .chain((x) =>
    fc.tuple(...x.buckets.map((b) => fc.option(storedState(b.capacity), { nil: undefined }))).map((states) => ({ ...x, states })),
  );

describe("token bucket over every admitted rate limit", () => {
  test("property: buckets have a finite, positive rate and a finite capacity; grant buckets hold at least one whole token", () => {
    fc.assert(
      fc.property(rateLimit, JITTER_MS, (limit, jitter) => {
        for (const buckets of [bucketsFor(limit), grantBuckets(limit, jitter)]) {
          assert.ok(buckets.length <= 2);
          assert.equal(new Set(buckets.map((b) => b.window)).size, buckets.length);
          for (const b of buckets) {
            assert.ok(Number.isFinite(b.ratePerMs) && b.ratePerMs >= MIN_RATE_PER_MS && b.ratePerMs <= 100, `rate ${b.ratePerMs}/ms`);
            assert.ok(Number.isFinite(b.capacity) && b.capacity > 0, `capacity ${b.capacity}`);
          }
        }
        if (jitter > 0) {
          const plain = bucketsFor(limit);
          grantBuckets(limit, jitter).forEach((b, i) => {
            assert.ok(b.capacity >= 1, `jitter ${jitter} leaves capacity ${b.capacity}`);
            assert.ok(b.capacity <= Math.max(1, plain[i]!.capacity), "the headroom never adds tokens");
            assert.equal(b.ratePerMs, plain[i]!.ratePerMs, "the rate is untouched");
          });
        }
      }),
      { numRuns: 300 },
    );
  });

  test("property: every bucket can hold a whole token (a send takes one), whatever the jitter setting", () => {
    fc.assert(
      fc.property(rateLimit, (limit) => {
        for (const b of bucketsFor(limit)) assert.ok(b.capacity >= 1, `capacity ${b.capacity} of ${JSON.stringify(limit)}`);
      }),
      { numRuns: 300 },
    );
  });

  test("property: refill stays finite and within capacity, and a clock stepping back mints nothing", () => {
    fc.assert(
      fc.property(bucketsAndStates, instantMs, ({ buckets, states }, nowMs) => {
        buckets.forEach((b, i) => {
          const s = states[i];
          const r = refill(b, s, nowMs);
          assertAllFinite(r, "refill");
          assert.ok(r.tokens <= b.capacity, `${r.tokens} tokens over capacity ${b.capacity}`);
          assert.ok(r.tokens >= 0);
          // No state, or a stamp more than a day ahead (no clock steps back that far): a fresh bucket.
          if (!s || s.atMs > nowMs + 86_400_000) return assert.deepEqual(r, { tokens: b.capacity, atMs: nowMs });
          assert.equal(r.atMs, Math.max(nowMs, s.atMs));
          if (nowMs <= s.atMs) assert.equal(r.tokens, Math.min(b.capacity, s.tokens), "no time passed: no tokens");
          else assert.ok(r.tokens >= Math.min(b.capacity, s.tokens), "time passing never takes tokens");
        });
      }),
      { numRuns: 400 },
    );
  });

  test("property: available is a whole number in [0, wanted]; spend leaves finite, non-negative tokens and fewer to grant", () => {
    fc.assert(
      fc.property(
        bucketsAndStates,
        instantMs,
        fc.oneof(fc.constantFrom(0, 1, 1000), fc.integer({ min: 0, max: 10_000 })),
        ({ buckets, states }, nowMs, wanted) => {
          const n = available(buckets, states, nowMs, wanted);
          assert.ok(Number.isInteger(n) && n >= 0 && n <= wanted, `available ${n} of ${wanted}`);
          const all = available(buckets, states, nowMs, Number.MAX_SAFE_INTEGER);
          for (const count of new Set([0, n, Math.floor(n / 2)])) {
            const after = spend(buckets, states, nowMs, count);
            assertAllFinite(after, "spend");
            after.forEach((s, i) => assert.ok(s.tokens >= 0 && s.tokens <= buckets[i]!.capacity));
            if (buckets.length > 0)
              assert.ok(available(buckets, after, nowMs, Number.MAX_SAFE_INTEGER) <= all - count, "spent tokens are gone");
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  test("property: nextTokenAtMs is the first whole millisecond a token exists, within the slowest rate's wait", () => {
    fc.assert(
      fc.property(bucketsAndStates, fc.integer({ min: 0, max: 2 * MAX_WAIT_MS }), ({ buckets, states }, aheadMs) => {
        // The clock runs forward: every stored state was written at or before now.
        const nowMs = Math.max(0, ...states.map((s) => s?.atMs ?? 0)) + (aheadMs % 3 === 0 ? 0 : aheadMs);
        const at = nextTokenAtMs(buckets, states as BucketState[], nowMs);
        assert.ok(Number.isInteger(at), `${at}`);
        assert.ok(at >= nowMs && at - nowMs <= MAX_WAIT_MS, `waits ${at - nowMs} ms`);
        assert.ok(available(buckets, states, at, 1) >= 1, "a whole token exists at nextTokenAtMs");
        if (at > nowMs) assert.equal(available(buckets, states, at - 1, 1), 0, "and not a millisecond before");
      }),
      { numRuns: 500 },
    );
  });

  test("property: after a clock step back, nextTokenAtMs still names an instant at which a token exists", () => {
    fc.assert(
      fc.property(bucketsAndStates, instantMs, ({ buckets, states }, nowMs) => {
        const at = nextTokenAtMs(buckets, states as BucketState[], nowMs);
        assert.ok(available(buckets, states, at, 1) >= 1, `no token at ${at} (now ${nowMs})`);
      }),
      { numRuns: 500 },
    );
  });

  test("property: msUntilWholeToken is exact, at most two steps from the quotient's ceiling, for every admitted rate", () => {
    const ratePerMs = fc.oneof(
      fc.constantFrom(MIN_RATE_PER_MS, BOUNDS.rate_per_second.min / 1000, BOUNDS.rate_per_second.max / 1000, 1 / 3, 0.1, 7e-7),
      fc.double({ min: Math.log(MIN_RATE_PER_MS), max: Math.log(100), noNaN: true }).map(Math.exp),
    );
    const tokens = fc.oneof(
      fc.constantFrom(0, Number.MIN_VALUE, 1e-12, 0.5, 1 - 2e-9, nextDown(1 - 1e-9)),
      fc.double({ min: 0, max: nextDown(1 - 1e-9), noNaN: true }),
    );
    fc.assert(
      fc.property(tokens, ratePerMs, (t, r) => {
        const wait = msUntilWholeToken(t, r);
        assert.ok(Number.isInteger(wait) && wait >= 1, `${wait}`);
        const ceiling = Math.ceil((1 - t) / r);
        assert.ok(wait <= ceiling && wait >= ceiling - 2, `wait ${wait}, ceiling ${ceiling}`);
        assert.ok(t + wait * r + 1e-9 >= 1, "a whole token at the wait");
        if (wait > 1) assert.ok(t + (wait - 1) * r + 1e-9 < 1, "none a millisecond earlier");
      }),
      { numRuns: 1000 },
    );
  });

  test("msUntilWholeToken refuses a rate that gives no finite wait instead of returning Infinity", () => {
    for (const r of [1e-323, 1e-320 / 1000, 0, -1, Number.NaN]) {
      assert.throws(() => msUntilWholeToken(0, r), RangeError, `rate ${r}`);
    }
  });

  test("property: claims at any clock (forward, standing, stepping back) keep every bucket finite and in range", () => {
    fc.assert(
      fc.property(
        rateLimit,
        JITTER_MS,
        instantMs,
        fc.array(fc.record({ step: clockStepMs, want: fc.integer({ min: 0, max: 1000 }) }), { minLength: 1, maxLength: 40 }),
        (limit, jitter, startMs, claims) => {
          const buckets: Bucket[] = grantBuckets(limit, jitter);
          let states: (BucketState | undefined)[] = buckets.map(() => undefined);
          let nowMs = startMs;
          for (const c of claims) {
            nowMs = stepClock(nowMs, c.step);
            const n = available(buckets, states, nowMs, c.want);
            assert.ok(Number.isInteger(n) && n >= 0 && n <= c.want);
            const spent = spend(buckets, states, nowMs, n);
            const at = nextTokenAtMs(buckets, spent, nowMs);
            assertAllFinite({ spent, at }, "claim");
            assert.ok(at >= nowMs && at - Math.max(nowMs, ...spent.map((s) => s.atMs)) <= MAX_WAIT_MS);
            spent.forEach((s, i) => assert.ok(s.tokens >= 0 && s.tokens <= buckets[i]!.capacity));
            states = spent;
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
