import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { BOUNDS_MS, BUCKETS, bucketOf, emptyHistogram, merge, percentile, record, total } from "../../src/policy/latency-histogram.js";

const histOf = (samples: readonly number[]) => samples.reduce((h, ms) => record(h, ms), emptyHistogram());
const histogram = fc.array(fc.nat({ max: 1_000 }), { minLength: BUCKETS, maxLength: BUCKETS });
const latency = fc.double({ min: 0, max: 10_000_000, noNaN: true });

test("buckets are lower-bound inclusive: [bound[i-1], bound[i])", () => {
  assert.equal(bucketOf(0), 0);
  assert.equal(bucketOf(0.999), 0);
  assert.equal(bucketOf(1), 1);
  assert.equal(bucketOf(1.5), 1);
  assert.equal(bucketOf(2), 2);
  assert.equal(bucketOf(49.9), 5);
  assert.equal(bucketOf(50), 6);
  assert.equal(bucketOf(3_599_999), BUCKETS - 2);
  assert.equal(bucketOf(3_600_000), BUCKETS - 1);
  assert.equal(bucketOf(1e12), BUCKETS - 1);
  assert.equal(bucketOf(-5), 0);
});

test("percentile interpolates inside the bucket and is null when empty", () => {
  assert.equal(percentile(emptyHistogram(), 0.5), null);
  // 10 samples in [20, 50): the median is halfway through the bucket.
  const h = record(emptyHistogram(), 30, 10);
  assert.equal(percentile(h, 0.5), 35);
  assert.equal(percentile(h, 1), 50);
  assert.equal(percentile(h, 0), 20);
  // 90 fast, 10 slow: p50 among the fast, p95 and p99 among the slow.
  const mixed = record(record(emptyHistogram(), 3, 90), 700, 10);
  assert.ok(percentile(mixed, 0.5)! >= 2 && percentile(mixed, 0.5)! < 5);
  assert.ok(percentile(mixed, 0.95)! >= 500 && percentile(mixed, 0.95)! <= 1000);
  // The open-ended last bucket reports its lower bound.
  assert.equal(percentile(record(emptyHistogram(), 5e7), 0.99), BOUNDS_MS[BOUNDS_MS.length - 1]);
});

test("property: percentile is monotone in p", () => {
  fc.assert(
    fc.property(histogram, fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), (h, a, b) => {
      if (total(h) === 0) return percentile(h, a) === null;
      const [lo, hi] = a <= b ? [a, b] : [b, a];
      return percentile(h, lo)! <= percentile(h, hi)!;
    }),
  );
});

test("property: merge is commutative and associative and keeps totals", () => {
  fc.assert(
    fc.property(histogram, histogram, histogram, (a, b, c) => {
      assert.deepEqual(merge(a, b), merge(b, a));
      assert.deepEqual(merge(merge(a, b), c), merge(a, merge(b, c)));
      assert.equal(total(merge(a, b)), total(a) + total(b));
    }),
  );
});

test("property: a percentile lies in the bucket of the exact quantile of the samples", () => {
  fc.assert(
    fc.property(fc.array(latency, { minLength: 1, maxLength: 200 }), fc.double({ min: 0.01, max: 1, noNaN: true }), (samples, p) => {
      const sorted = [...samples].sort((x, y) => x - y);
      const exact = sorted[Math.ceil(p * sorted.length) - 1]!;
      const b = bucketOf(exact);
      const lo = b === 0 ? 0 : BOUNDS_MS[b - 1]!;
      const hi = BOUNDS_MS[b] ?? lo; // the last bucket reports its lower bound
      const got = percentile(histOf(samples), p)!;
      return got >= lo && got <= hi;
    }),
  );
});

test("merge reads a shorter histogram as zeros", () => {
  assert.deepEqual(merge([1, 2], [1, 1, 1]), [2, 3, 1]);
  assert.equal(total(merge([], emptyHistogram())), 0);
});
