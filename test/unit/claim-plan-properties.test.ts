import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { planGrants, planAfterClaim, IDLE_RECHECK_MS, type PlanOptions } from "../../src/dispatch/claim-plan.js";
import type { ClaimedDestination } from "../../src/db/queries/claim.js";
import { storedDestinationProblem } from "../../src/policy/stored-config.js";
import { BOUNDS } from "../../src/policy/bounds.js";
import { grantBuckets, type RateLimit } from "../../src/policy/token-bucket.js";
import {
  LATEST_MS,
  adaptiveConfig,
  assertAllFinite,
  bound,
  deliverySchedule,
  instantMs,
  rateLimit,
  rateLimitOrNull,
  retrySchedule,
  stepClock,
  throttleSchedule,
} from "../helpers/admitted.js";

// The claim planner over rows whose config is anything the API admits and whose state is anything
// the store can hold for it (stored-config.ts's ranges), each with its own clock: nothing is set
// aside (no row is refused, nothing throws), every figure is finite, every Date valid, and what
// it writes back is a row the next claim reads without complaint.

const DAY_MS = 86_400_000;

/** An instant near `nowMs` (past or future, up to a week), or any instant at all. */
const near = (nowMs: number) =>
  fc.oneof(
    fc.constantFrom(0, -1, 1).map((d) => stepClock(nowMs, d)),
    fc.integer({ min: -7 * DAY_MS, max: 7 * DAY_MS }).map((d) => stepClock(nowMs, d)),
    instantMs,
  );
const nearDate = (nowMs: number) =>
  fc.option(
    near(nowMs).map((ms) => new Date(ms)),
    { nil: null },
  );

const paceState = (nowMs: number) =>
  fc.record({
    rate: fc.oneof(bound("adaptive_rate_per_second"), fc.constantFrom(1e-5, 1 / 60_000)),
    concurrency: bound("max_concurrency"),
    probing: fc.boolean(),
    ceiling: fc.option(bound("adaptive_rate_per_second"), { nil: null }),
    baselineMs: fc.option(fc.integer({ min: 0, max: 600_000 }), { nil: null }),
    baselineAtMs: fc.option(near(nowMs), { nil: null }),
    recentMs: fc.option(fc.integer({ min: 0, max: 600_000 }), { nil: null }),
    recentN: fc.nat({ max: 100 }),
    windowStartMs: near(nowMs),
    windowOk: fc.nat({ max: 10_000 }),
    cutAtMs: fc.option(near(nowMs), { nil: null }),
    changedAtMs: near(nowMs),
    reason: fc.constant("stored"),
  });

const bucketState = (nowMs: number) =>
  fc.option(
    fc.record(
      {
        second: fc.record({
          tokens: fc.oneof(fc.constantFrom(0, 0.5, 1), fc.double({ min: 0, max: 2e6, noNaN: true })),
          atMs: near(nowMs),
        }),
        minute: fc.record({
          tokens: fc.oneof(fc.constantFrom(0, 0.5, 1), fc.double({ min: 0, max: 6e6, noNaN: true })),
          atMs: near(nowMs),
        }),
      },
      { requiredKeys: [] },
    ),
    { nil: null },
  );

/** A locked destination row, its config within what the API admits. */
const claimed = (id: string): fc.Arbitrary<ClaimedDestination> =>
  instantMs.chain((nowMs) =>
    fc
      .record({
        timeout_seconds: bound("timeout_seconds"),
        max_concurrency: bound("max_concurrency"),
        ordered: fc.boolean(),
        retry_schedule_seconds: retrySchedule,
        throttle_schedule_seconds: throttleSchedule,
        throttled_until: nearDate(nowMs),
        pause: fc.option(fc.constantFrom("transient", "permanent", "manual"), { nil: null }),
        paused_at: near(nowMs).map((ms) => new Date(Math.min(ms, nowMs))),
        rate_limit: rateLimitOrNull,
        bucket_state: bucketState(nowMs),
        delivery_schedule: fc.option(deliverySchedule, { nil: null }),
        ramp_limit: fc.option(bound("max_concurrency"), { nil: null }),
        adaptive: fc.option(adaptiveConfig, { nil: null }),
        pace_state: fc.option(paceState(nowMs), { nil: null }),
        next_probe_at: nearDate(nowMs),
        probe_interval_seconds: bound("probe_interval_seconds"),
        idle_recheck: fc.boolean(),
        rate_limited: fc.boolean(),
        quiet_holding: fc.boolean(),
        ready_at: nearDate(nowMs),
        inflight: fc.oneof(fc.constantFrom(0, 1, 999, 1000, 1001), fc.nat({ max: 1100 })),
        next_lease_expiry: nearDate(nowMs),
        next_waiting: nearDate(nowMs),
        has_waiting: fc.boolean(),
        head_quiet_hold: fc.boolean(),
      })
      .map(({ pause, paused_at, ...r }) => ({
        ...r,
        id,
        url: "https://example.com/hook",
        secrets: [{ secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", expires_at: null }],
        headers: {},
        tenant_id: "ten_1",
        paused_at: pause === null ? null : paused_at,
        pause_cause: pause,
        has_waiting: r.delivery_schedule ? r.has_waiting : null,
        head_quiet_hold: r.delivery_schedule && r.ordered ? r.head_quiet_hold : null,
        now: new Date(nowMs),
      })),
  );

const rows = fc.integer({ min: 1, max: 6 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => claimed(`dst_${i}`))));

const options: fc.Arbitrary<PlanOptions> = fc.record({
  capacity: fc.oneof(fc.constantFrom(1, 10_000), fc.integer({ min: 1, max: 10_000 })),
  grantCap: fc.oneof(fc.constantFrom(1, 10_000), fc.integer({ min: 1, max: 10_000 })),
  leaseMarginSeconds: fc.oneof(fc.constantFrom(1, 3600), fc.integer({ min: 1, max: 3600 })),
  rateSendJitterMs: fc.oneof(fc.constantFrom(0, 500, 10_000), fc.integer({ min: 0, max: 10_000 })),
});

/** What leaseDeliveries took of each grant (all of it, or fewer: deliveries can be gone by then). */
const leasing = fc.record({
  shortfall: fc.array(fc.nat({ max: 3 }), { minLength: 6, maxLength: 6 }),
  moreDue: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
});

describe("claim planner over every admitted destination", () => {
  test("generated rows are what the API admits (the store check finds nothing wrong)", () => {
    fc.assert(
      fc.property(rows, (locked) => {
        for (const d of locked) assert.equal(storedDestinationProblem(d), null, d.id);
      }),
      { numRuns: 100 },
    );
  });

  test("property: grants are whole counts within slots, grant cap and the worker's capacity; nothing is set aside", () => {
    fc.assert(
      fc.property(rows, options, (locked, opts) => {
        const plan = planGrants(locked, opts);
        assert.deepEqual(
          plan.setAside.map((s) => `${s.destination.id}: ${s.detail}`),
          [],
        );
        assertAllFinite({ grants: plan.grants, shaped: plan.shaped, quiet: plan.quiet }, "plan");
        let total = plan.probes.length;
        const seen = new Set<string>();
        for (const g of plan.grants) {
          const d = locked.find((x) => x.id === g.destinationId)!;
          assert.ok(!seen.has(d.id) && d.paused_at === null);
          seen.add(d.id);
          assert.ok(Number.isInteger(g.count) && g.count >= 1 && g.count <= opts.grantCap);
          assert.ok(g.count <= (d.ordered ? 1 : d.max_concurrency));
          assert.equal(g.leaseSeconds, d.timeout_seconds + opts.leaseMarginSeconds);
          total += g.count;
        }
        assert.ok(total <= opts.capacity, `${total} leased of capacity ${opts.capacity}`);
        for (const p of plan.probes) assert.equal(p.pause_cause, "transient");
        for (const [, s] of plan.shaped) assert.ok(Number.isInteger(s.tokens) && s.tokens >= 0 && s.tokens <= s.slots);
      }),
      { numRuns: 200 },
    );
  });

  test("property: after the claim every row gets a finite ready_at (or none), finite buckets and a state the next claim accepts", () => {
    fc.assert(
      fc.property(rows, options, leasing, (locked, opts, { shortfall, moreDue }) => {
        const plan = planGrants(locked, opts);
        const granted = new Map(plan.grants.map((g, i) => [g.destinationId, Math.max(0, g.count - shortfall[i % 6]!)]));
        const more = new Set(locked.filter((_, i) => moreDue[i]).map((d) => d.id));
        const after = planAfterClaim(locked, granted, more, plan, opts);
        assert.deepEqual(
          after.setAside.map((s) => `${s.destination.id}: ${s.detail}`),
          [],
        );
        assert.equal(after.updates.length, locked.length);
        assertAllFinite(after.updates, "updates");
        for (const [i, u] of after.updates.entries()) {
          const d = locked[i]!;
          const nowMs = d.now.getTime();
          assert.equal(u.id, d.id);
          if (u.readyAt === null) {
            // Only a paused destination nobody probes, or an idle re-check that settled, sleeps until woken.
            assert.ok(d.paused_at !== null ? d.pause_cause !== "transient" : d.idle_recheck && !granted.get(d.id), `${d.id} sleeps`);
          } else if (d.paused_at === null && !(d.idle_recheck && !granted.get(d.id))) {
            assert.ok(u.readyAt.getTime() <= nowMs + IDLE_RECHECK_MS, "looked at again within the re-check");
          }
          // What it writes is read back by the next claim: the same ranges the store check holds it to.
          const written = {
            bucket_state: u.bucketState,
            next_probe_at: u.nextProbeAt,
          };
          if (nowMs <= LATEST_MS - 2 * DAY_MS) assert.equal(storedDestinationProblem(written), null);
        }
        const readyNow = after.updates.some((u, i) => u.readyAt !== null && u.readyAt.getTime() <= locked[i]!.now.getTime());
        assert.equal(after.readyAgain, readyNow);
      }),
      { numRuns: 200 },
    );
  });

  test("property: a rate-limited destination with a free slot, due work and a bucket left alone is granted a send", () => {
    fc.assert(
      fc.property(claimed("dst_0"), rateLimit, (d0, limit) => {
        const d: ClaimedDestination = {
          ...d0,
          rate_limit: limit,
          adaptive: null,
          paused_at: null,
          pause_cause: null,
          throttled_until: null,
          ramp_limit: null,
          delivery_schedule: null,
          inflight: 0,
          bucket_state: null,
        };
        const plan = planGrants([d], { capacity: 100, grantCap: 100, leaseMarginSeconds: 30, rateSendJitterMs: 0 });
        assert.equal(plan.grants.length, 1, `no grant for ${JSON.stringify(limit)}`);
      }),
      { numRuns: 100 },
    );
  });

  test("the slowest admitted rates still grant once their token is due", () => {
    const opts: PlanOptions = { capacity: 10, grantCap: 10, leaseMarginSeconds: 30, rateSendJitterMs: 500 };
    const limits: RateLimit[] = [
      { max_per_minute: BOUNDS.rate_per_minute.min, burst_capacity: 1 },
      { max_per_second: BOUNDS.rate_per_second.min, burst_capacity: 1 },
    ];
    for (const limit of limits) {
      const wait = Math.ceil(1 / grantBuckets(limit, opts.rateSendJitterMs)[0]!.ratePerMs);
      fc.assert(
        fc.property(claimed("dst_0"), (d0) => {
          const nowMs = d0.now.getTime();
          fc.pre(nowMs + wait <= LATEST_MS);
          const empty = { tokens: 0, atMs: nowMs };
          const d: ClaimedDestination = {
            ...d0,
            ...{ adaptive: null, paused_at: null, pause_cause: null, throttled_until: null, inflight: 0, ramp_limit: null },
            rate_limit: limit,
            delivery_schedule: null,
            bucket_state: { second: empty, minute: empty },
          };
          const plan = planGrants([d], opts);
          assert.equal(plan.grants.length, 0, "an empty bucket grants nothing");
          const after = planAfterClaim([d], new Map(), new Set([d.id]), plan, opts);
          assert.deepEqual(after.setAside, []);
          assertAllFinite(after.updates, "updates");
          // ready_at is capped by the idle re-check; the claim a token's wait later grants.
          const later = { ...d, now: new Date(nowMs + wait), bucket_state: after.updates[0]!.bucketState };
          assert.equal(planGrants([later], opts).grants.length, 1, "granted once the token is due");
        }),
        { numRuns: 30 },
      );
    }
  });
});
