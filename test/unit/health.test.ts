import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { classify, type Outcome, type RawResult } from "../../src/policy/outcome.js";
import {
  applyOutcomes,
  emptyHealth,
  healthClass,
  healthTransition,
  healthView,
  scoreOf,
  statusOf,
  DEFAULT_HEALTH_CONFIG,
  type HealthConfig,
  type HealthInput,
  type HealthState,
} from "../../src/policy/health.js";

const NOW = Date.parse("2026-03-01T12:00:00Z");
const http = (statusCode: number, retryAfter: string | null = null): Outcome => classify({ statusCode, errorClass: null, retryAfter }, NOW);
const net = (errorClass: RawResult["errorClass"], errorMessage: string | null = null): HealthInput => ({
  ...classify({ statusCode: null, errorClass, retryAfter: null }, NOW),
  errorMessage,
});
const times = <T>(n: number, x: T): T[] => Array.from({ length: n }, () => x);
const cfg = DEFAULT_HEALTH_CONFIG;

// Every kind of answer the sender and classify() can produce.
const arbOutcome: fc.Arbitrary<Outcome> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(200, 201, 204).map((s) => http(s)) },
  { weight: 4, arbitrary: fc.constantFrom(500, 502, 503, 504).map((s) => http(s)) },
  { weight: 2, arbitrary: fc.constantFrom(429).map((s) => http(s, "5")) },
  { weight: 2, arbitrary: fc.constantFrom(400, 401, 403, 404, 409, 422).map((s) => http(s)) },
  { weight: 1, arbitrary: fc.constantFrom(301, 302, 307, 308, 410, 101).map((s) => http(s)) },
  { weight: 2, arbitrary: fc.constantFrom("timeout", "connection", "dns", "tls", "blocked", "invalid_response", null).map((c) => net(c)) },
);
const arbCfg: fc.Arbitrary<HealthConfig> = fc.record({
  windowSize: fc.integer({ min: 1, max: 60 }),
  minSamples: fc.integer({ min: 0, max: 70 }),
  maxConsecutiveFailures: fc.integer({ min: 1, max: 15 }),
  authFailuresToPause: fc.integer({ min: 1, max: 5 }),
});
// "large": fast-check's default size keeps arrays at a handful of items, too few to slide a window.
const arbOutcomes = fc.array(arbOutcome, { maxLength: 150, size: "large" });

/** Splits a sequence into batches at the given cut points. */
function batches<T>(xs: T[], cuts: number[]): T[][] {
  const at = [...new Set(cuts.map((c) => c % (xs.length + 1)))].sort((a, b) => a - b);
  const out: T[][] = [];
  let from = 0;
  for (const c of [...at, xs.length]) {
    out.push(xs.slice(from, c));
    from = c;
  }
  return out;
}
function fold(xs: Outcome[][], c: HealthConfig, start: HealthState = emptyHealth()): HealthState {
  return xs.reduce((s, b) => applyOutcomes(s, b, c).state, start);
}

describe("healthClass", () => {
  test("maps every answer to its class", () => {
    const cases: [HealthInput, string][] = [
      [http(200), "success"],
      [http(204), "success"],
      [http(429), "throttle"],
      [http(429, "30"), "throttle"],
      [http(410), "gone"],
      [http(400), "client_error"],
      [http(409), "client_error"],
      [http(422), "client_error"],
      [http(401), "auth_or_missing"],
      [http(403), "auth_or_missing"],
      [http(404), "auth_or_missing"],
      [http(301), "redirect"],
      [http(302), "redirect"],
      [http(308), "redirect"],
      [http(500), "server_error"],
      [http(503, "10"), "server_error"],
      [http(101), "invalid_response"],
      [net("timeout"), "timeout"],
      [net("connection"), "connection"],
      [net(null), "connection"],
      [net("tls"), "tls"],
      [net("dns"), "dns"],
      [net("blocked"), "blocked"],
      [net("invalid_response"), "invalid_response"],
    ];
    for (const [o, cls] of cases) assert.equal(healthClass(o), cls, JSON.stringify(o));
  });
  test("an outcome without an error class is read from its status", () => {
    const raw = (statusCode: number | null): Outcome => ({ kind: "failure", statusCode, errorClass: null, retryAfterSeconds: null });
    assert.equal(healthClass(raw(404)), "auth_or_missing");
    assert.equal(healthClass(raw(502)), "server_error");
    assert.equal(healthClass(raw(null)), "connection");
  });
});

describe("score and status", () => {
  test("score is the rounded success rate; an empty window is 100", () => {
    assert.equal(scoreOf(""), 100);
    assert.equal(scoreOf("1"), 100);
    assert.equal(scoreOf("0"), 0);
    assert.equal(scoreOf("110"), 67);
    assert.equal(scoreOf("1".repeat(21) + "0".repeat(29)), 42);
  });
  test("status thresholds 95 / 75 / 50, once the minimum sample is there", () => {
    assert.deepEqual(
      [100, 95, 94, 75, 74, 50, 49, 0].map((s) => statusOf(s, 50, cfg)),
      ["healthy", "healthy", "degraded", "degraded", "critical", "critical", "unhealthy", "unhealthy"],
    );
    assert.equal(statusOf(0, 9, cfg), "healthy", "9 attempts are below the default minimum of 10");
    assert.equal(statusOf(0, 10, cfg), "unhealthy");
    assert.equal(statusOf(0, 5, { ...cfg, windowSize: 5, minSamples: 10 }), "unhealthy", "the minimum is capped at the window size");
  });
  test("one early failure of a new destination is no verdict", () => {
    const r = applyOutcomes(emptyHealth(), [http(500)], cfg);
    assert.equal(r.score, 0);
    assert.equal(r.state.status, "healthy");
    assert.equal(r.pause, null);
    assert.equal(r.transition, null);
    assert.deepEqual(healthView(r.state, cfg), { status: "healthy", score: 0, consecutive_failures: 1 });
  });
  test("a smaller window setting trims the stored window", () => {
    const s = applyOutcomes({ ...emptyHealth(), window: "0000011111" }, [], { ...cfg, windowSize: 5 });
    assert.equal(s.state.window, "11111");
    assert.equal(s.score, 100);
  });
  test("a bad configuration is refused", () => {
    assert.throws(() => applyOutcomes(emptyHealth(), [], { ...cfg, windowSize: 0 }), RangeError);
    assert.throws(() => applyOutcomes(emptyHealth(), [], { ...cfg, maxConsecutiveFailures: 1.5 }), RangeError);
  });
});

describe("auto-pause", () => {
  test("K consecutive failures pause, transient for 5xx, naming the last answer", () => {
    const nine = applyOutcomes(emptyHealth(), times(9, http(500)), cfg);
    assert.equal(nine.pause, null);
    const r = applyOutcomes(nine.state, [http(502)], cfg);
    assert.deepEqual(r.pause, {
      reason: "auto: 10 consecutive failures (last: HTTP 502)",
      cause: "transient",
      code: "consecutive_failures",
    });
    assert.equal(r.transition, "paused");
    const t = applyOutcomes(emptyHealth(), times(10, net("timeout")), cfg);
    assert.deepEqual(t.pause, {
      reason: "auto: 10 consecutive failures (last: timed out)",
      cause: "transient",
      code: "consecutive_failures",
    });
  });
  test("TLS failures pause like 5xx (transient), never at once", () => {
    assert.equal(applyOutcomes(emptyHealth(), times(9, net("tls")), cfg).pause, null);
    assert.deepEqual(applyOutcomes(emptyHealth(), times(10, net("tls")), cfg).pause, {
      reason: "auto: 10 consecutive failures (last: TLS handshake failed)",
      cause: "transient",
      code: "consecutive_failures",
    });
  });
  test("K consecutive 4xx or permanent redirects pause with a permanent cause", () => {
    assert.equal(applyOutcomes(emptyHealth(), times(10, http(400)), cfg).pause?.cause, "permanent");
    assert.equal(applyOutcomes(emptyHealth(), times(10, http(301)), cfg).pause?.cause, "permanent");
    assert.equal(applyOutcomes(emptyHealth(), times(10, http(302)), cfg).pause?.cause, "transient");
  });
  test("410 pauses at once", () => {
    const r = applyOutcomes(emptyHealth(), [http(410)], cfg);
    assert.deepEqual(r.pause, { reason: "auto: the endpoint answered 410 Gone", cause: "permanent", code: "gone" });
    assert.equal(r.transition, "paused");
    assert.equal(r.state.consecutiveFailures, 1);
  });
  test("a DNS failure pauses at once, naming the code when the message has it", () => {
    assert.deepEqual(applyOutcomes(emptyHealth(), [net("dns", "getaddrinfo ENOTFOUND hooks.example.invalid")], cfg).pause, {
      reason: "auto: DNS lookup failed for the host (ENOTFOUND)",
      cause: "permanent",
      code: "dns",
    });
    assert.deepEqual(applyOutcomes(emptyHealth(), [net("dns")], cfg).pause, {
      reason: "auto: DNS lookup failed for the host",
      cause: "permanent",
      code: "dns",
    });
  });
  test("a blocked address pauses at once, permanent, naming the address and the setting", () => {
    const message =
      "Refused to connect to localhost (127.0.0.1): a loopback address, which this Sluice does not deliver to. " +
      "Set SLUICE_ALLOW_PRIVATE_NETWORKS=1 or add it to SLUICE_ALLOWED_CIDRS (e.g. 127.0.0.0/8) to allow it.";
    const r = applyOutcomes(emptyHealth(), [net("blocked", message)], cfg);
    assert.deepEqual(r.pause, {
      reason:
        "auto: refused to connect to localhost (127.0.0.1): a loopback address, which this Sluice does not deliver to. " +
        "Set SLUICE_ALLOW_PRIVATE_NETWORKS=1 or add it to SLUICE_ALLOWED_CIDRS (e.g. 127.0.0.0/8) to allow it, then resume the destination",
      cause: "permanent",
      code: "blocked",
    });
    assert.equal(r.transition, "paused");
    assert.equal(r.state.status, "healthy", "one attempt is below the minimum sample: only the hard rule paused");
    // A wrapped message is found inside; without one the reason still names the settings.
    assert.match(
      applyOutcomes(emptyHealth(), [net("blocked", `fetch failed: ${message}`)], cfg).pause!.reason,
      /^auto: refused to connect to localhost/,
    );
    assert.match(
      applyOutcomes(emptyHealth(), [net("blocked")], cfg).pause!.reason,
      /SLUICE_ALLOW_PRIVATE_NETWORKS=1 .*SLUICE_ALLOWED_CIDRS.*resume/,
    );
    // It replaces a transient pause decided earlier in the same batch.
    assert.equal(applyOutcomes(emptyHealth(), [...times(10, http(500)), net("blocked", message)], cfg).pause?.code, "blocked");
  });
  test("3 consecutive 401/403/404 pause with a permanent cause and a hint", () => {
    const two = applyOutcomes(emptyHealth(), [http(404), http(404)], cfg);
    assert.equal(two.pause, null);
    const r = applyOutcomes(two.state, [http(404)], cfg);
    assert.deepEqual(r.pause, {
      reason: "auto: 3 consecutive HTTP 401/403/404 answers (last: HTTP 404); check the URL",
      cause: "permanent",
      code: "auth",
    });
    assert.match(applyOutcomes(emptyHealth(), times(3, http(401)), cfg).pause!.reason, /check the credentials/);
    // Another answer in between ends the run; a 429 does not.
    assert.equal(applyOutcomes(emptyHealth(), [http(404), http(500), http(404), http(404)], cfg).pause, null);
    assert.equal(applyOutcomes(emptyHealth(), [http(404), http(429), http(404), http(404)], cfg).pause?.cause, "permanent");
  });
  test("the score pauses once the window holds the minimum sample, never before", () => {
    // success, failure, failure, …: a third of the answers succeed, the run never passes 2.
    const seq = Array.from({ length: 11 }, (_, i) => (i % 3 === 0 ? http(200) : http(500)));
    const nine = applyOutcomes(emptyHealth(), seq.slice(0, 9), cfg);
    assert.equal(nine.pause, null, "9 attempts: below the minimum sample");
    assert.equal(nine.state.status, "healthy");
    assert.equal(nine.score, 33);
    const ten = applyOutcomes(nine.state, seq.slice(9, 10), cfg); // the 10th is a success: no pause
    assert.equal(ten.pause, null);
    assert.equal(ten.state.status, "unhealthy");
    const r = applyOutcomes(ten.state, seq.slice(10), cfg);
    assert.deepEqual(r.pause, {
      reason: "auto: health score 36 fell below 50 (7 of 11 recent attempts failed)",
      cause: "transient",
      code: "score",
    });
    assert.equal(r.state.consecutiveFailures, 1);
  });
  test("score reason: exact numbers", () => {
    const start: HealthState = {
      window: "1".repeat(21) + "0".repeat(28),
      consecutiveFailures: 0,
      consecutiveAuthFailures: 0,
      status: "critical",
    };
    const r = applyOutcomes(start, [http(500)], cfg);
    assert.deepEqual(r.pause, {
      reason: "auto: health score 42 fell below 50 (29 of 50 recent attempts failed)",
      cause: "transient",
      code: "score",
    });
  });
  test("a success never pauses, even with the score below 50", () => {
    const start: HealthState = { window: "0".repeat(50), consecutiveFailures: 0, consecutiveAuthFailures: 0, status: "unhealthy" };
    assert.equal(applyOutcomes(start, [http(200)], cfg).pause, null);
  });
  test("in one batch the first pause wins, but a later permanent one replaces a transient one", () => {
    const r = applyOutcomes(emptyHealth(), [...times(10, http(500)), http(410), http(500)], cfg);
    assert.deepEqual(r.pause, { reason: "auto: the endpoint answered 410 Gone", cause: "permanent", code: "gone" });
    const first = applyOutcomes(emptyHealth(), times(14, http(500)), cfg);
    assert.equal(first.pause?.reason, "auto: 10 consecutive failures (last: HTTP 500)");
    const perm = applyOutcomes(emptyHealth(), [http(410), net("dns")], cfg);
    assert.equal(perm.pause?.reason, "auto: the endpoint answered 410 Gone");
    // Later outcomes still count.
    assert.equal(r.state.consecutiveFailures, 12);
  });
  test("an already-paused destination is updated but neither paused again nor alerted", () => {
    const r = applyOutcomes(emptyHealth(), times(20, http(500)), cfg, { paused: true });
    assert.equal(r.pause, null);
    assert.equal(r.transition, null);
    assert.equal(r.state.consecutiveFailures, 20);
    assert.equal(r.state.status, "unhealthy");
  });
});

describe("transitions", () => {
  test("the pure rule", () => {
    assert.equal(healthTransition("healthy", "degraded", false), "degraded");
    assert.equal(healthTransition("healthy", "critical", false), "degraded");
    assert.equal(healthTransition("degraded", "critical", false), null);
    assert.equal(healthTransition("critical", "unhealthy", false), null);
    assert.equal(healthTransition("critical", "healthy", false), null);
    assert.equal(healthTransition("healthy", "healthy", false), null);
    assert.equal(healthTransition("degraded", "unhealthy", true), "paused");
  });
  test("alerts on the first step down only, and again after a recovery", () => {
    let s: HealthState = { window: "1".repeat(50), consecutiveFailures: 0, consecutiveAuthFailures: 0, status: "healthy" };
    const step = (o: Outcome[]) => {
      const r = applyOutcomes(s, o, cfg);
      s = r.state;
      return r.transition;
    };
    assert.equal(step(times(3, http(500))), "degraded"); // 47/50 = 94
    assert.equal(step([http(200), ...times(5, http(500)), http(200), ...times(5, http(500))]), null); // 37/50: critical, no new alert
    assert.equal(s.status, "critical");
    assert.equal(step(times(50, http(200))), null); // healthy again
    assert.equal(s.status, "healthy");
    assert.equal(step(times(3, http(503))), "degraded");
  });
});

describe("properties", () => {
  test("the window never exceeds N and holds only 1/0", () => {
    fc.assert(
      fc.property(arbCfg, arbOutcomes, fc.array(fc.nat(), { maxLength: 6 }), (c, xs, cuts) => {
        let s = emptyHealth();
        for (const b of batches(xs, cuts)) {
          s = applyOutcomes(s, b, c).state;
          if (s.window.length > c.windowSize || !/^[01]*$/.test(s.window)) return false;
        }
        return true;
      }),
      { numRuns: 300 },
    );
  });

  test("score, status and counters equal a brute-force model of the whole sequence", () => {
    fc.assert(
      fc.property(arbCfg, arbOutcomes, fc.array(fc.nat(), { maxLength: 6 }), (c, xs, cuts) => {
        let last: ReturnType<typeof applyOutcomes> = applyOutcomes(emptyHealth(), [], c);
        for (const b of batches(xs, cuts)) last = applyOutcomes(last.state, b, c);
        const attempts = xs.filter((o) => o.kind !== "throttled");
        const recent = attempts.slice(Math.max(0, attempts.length - c.windowSize));
        const ok = recent.filter((o) => o.kind === "success").length;
        const score = recent.length === 0 ? 100 : Math.round((100 * ok) / recent.length);
        assert.equal(last.score, score);
        assert.equal(scoreOf(last.state.window), score);
        assert.equal(last.state.window, recent.map((o) => (o.kind === "success" ? "1" : "0")).join(""));
        let run = 0;
        for (const o of attempts) run = o.kind === "success" ? 0 : run + 1;
        assert.equal(last.state.consecutiveFailures, run);
        let auth = 0;
        for (const o of attempts) auth = healthClass(o) === "auth_or_missing" ? auth + 1 : 0;
        assert.equal(last.state.consecutiveAuthFailures, auth);
        const min = Math.min(c.minSamples, c.windowSize);
        const want =
          recent.length < min ? "healthy" : score >= 95 ? "healthy" : score >= 75 ? "degraded" : score >= 50 ? "critical" : "unhealthy";
        assert.equal(last.state.status, want);
      }),
      { numRuns: 300 },
    );
  });

  test("one at a time equals one batch, state-wise", () => {
    fc.assert(
      fc.property(arbCfg, arbOutcomes, (c, xs) => {
        const single = fold(
          xs.map((x) => [x]),
          c,
        );
        const whole = applyOutcomes(emptyHealth(), xs, c).state;
        assert.deepEqual(single, whole);
      }),
      { numRuns: 300 },
    );
  });

  test("429s never change the state, wherever they fall", () => {
    fc.assert(
      fc.property(arbCfg, arbOutcomes, fc.integer({ min: 1, max: 20 }), fc.array(fc.nat(), { maxLength: 20 }), (c, xs, k, at) => {
        const s = applyOutcomes(emptyHealth(), xs, c).state;
        const r = applyOutcomes(s, times(k, http(429, "3")), c);
        assert.deepEqual(r.state, s);
        assert.equal(r.pause, null);
        assert.equal(r.transition, null);
        const sprinkled = [...xs];
        for (const i of at) sprinkled.splice(i % (sprinkled.length + 1), 0, http(429));
        assert.deepEqual(applyOutcomes(emptyHealth(), sprinkled, c).state, s);
      }),
      { numRuns: 200 },
    );
  });

  test("a success resets both failure runs", () => {
    fc.assert(
      fc.property(arbCfg, arbOutcomes, (c, xs) => {
        const s = applyOutcomes(applyOutcomes(emptyHealth(), xs, c).state, [http(200)], c).state;
        assert.equal(s.consecutiveFailures, 0);
        assert.equal(s.consecutiveAuthFailures, 0);
        assert.equal(s.window.at(-1), "1");
      }),
      { numRuns: 200 },
    );
  });

  test("K consecutive 5xx always pause, transient, from any state", () => {
    fc.assert(
      fc.property(arbCfg, arbOutcomes, fc.constantFrom(500, 502, 503, 504), (c, xs, code) => {
        const s = applyOutcomes(emptyHealth(), xs, c).state;
        const r = applyOutcomes(s, times(c.maxConsecutiveFailures, http(code)), c);
        assert.equal(r.pause?.cause, "transient");
        assert.equal(r.transition, "paused");
      }),
      { numRuns: 200 },
    );
    // With the defaults: 10.
    fc.assert(
      fc.property(arbOutcomes, (xs) => {
        const s = applyOutcomes(emptyHealth(), xs, cfg).state;
        assert.equal(applyOutcomes(s, times(10, http(500)), cfg).pause?.cause, "transient");
      }),
      { numRuns: 100 },
    );
  });

  test("3 consecutive 404 always pause, permanent, from any state", () => {
    fc.assert(
      fc.property(arbOutcomes, (xs) => {
        const s = applyOutcomes(emptyHealth(), xs, cfg).state;
        const r = applyOutcomes(s, times(3, http(404)), cfg);
        assert.equal(r.pause?.cause, "permanent");
      }),
      { numRuns: 200 },
    );
  });

  test("410, DNS failures and blocked addresses pause at once, permanent, from any state", () => {
    const cases: [HealthInput, RegExp][] = [
      [http(410), /410 Gone/],
      [net("dns", "getaddrinfo EAI_AGAIN x.example"), /DNS lookup failed/],
      [
        net("blocked", "Refused to connect to 10.0.0.1: a private-network address, which this Sluice does not deliver to. Set …"),
        /10\.0\.0\.1: a private-network address/,
      ],
    ];
    fc.assert(
      fc.property(arbCfg, arbOutcomes, fc.constantFrom(...cases), (c, xs, [o, reason]) => {
        const s = applyOutcomes(emptyHealth(), xs, c).state;
        const r = applyOutcomes(s, [o], c);
        assert.equal(r.pause?.cause, "permanent");
        assert.match(r.pause.reason, reason);
      }),
      { numRuns: 200 },
    );
  });

  test("a batch pauses exactly when some failure in it meets a rule, judged on its prefix", () => {
    fc.assert(
      fc.property(arbCfg, arbOutcomes, (c, xs) => {
        const attempts = xs.filter((o) => o.kind !== "throttled");
        let expected = false;
        for (let i = 0; i < attempts.length && !expected; i++) {
          const o = attempts[i]!;
          if (o.kind === "success") continue;
          const prefix = attempts.slice(0, i + 1);
          const recent = prefix.slice(Math.max(0, prefix.length - c.windowSize));
          const score = Math.round((100 * recent.filter((x) => x.kind === "success").length) / recent.length);
          let run = 0;
          while (run < prefix.length && prefix[prefix.length - 1 - run]!.kind !== "success") run++;
          let auth = 0;
          while (auth < prefix.length && healthClass(prefix[prefix.length - 1 - auth]!) === "auth_or_missing") auth++;
          expected =
            o.kind === "gone" ||
            o.errorClass === "dns" ||
            o.errorClass === "blocked" ||
            auth >= c.authFailuresToPause ||
            run >= c.maxConsecutiveFailures ||
            (recent.length >= Math.min(c.minSamples, c.windowSize) && score < 50);
        }
        const r = applyOutcomes(emptyHealth(), xs, c);
        assert.equal(r.pause !== null, expected);
        assert.equal(r.transition === "paused", expected);
      }),
      { numRuns: 300 },
    );
  });

  test("a pause is only ever decided on a failure, and reasons are prefixed auto:", () => {
    fc.assert(
      fc.property(arbCfg, arbOutcomes, (c, xs) => {
        const s = applyOutcomes(emptyHealth(), xs, c).state;
        const ok = applyOutcomes(s, [http(200)], c);
        assert.equal(ok.pause, null);
        const r = applyOutcomes(emptyHealth(), xs, c);
        if (r.pause !== null) assert.match(r.pause.reason, /^auto: /);
      }),
      { numRuns: 200 },
    );
  });
});
