import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import fc from "fast-check";
import {
  HEADER_MASK,
  MAX_CUSTOM_HEADERS,
  checkCustomHeaders,
  headerValueProblem,
  isHeaderName,
  isSecretHeader,
  maskHeaders,
  reservedReason,
  restoreMasked,
} from "../../src/policy/custom-headers.js";
import { buildDeliveryHeaders } from "../../src/delivery/sender.js";
import { createLogger } from "../../src/logger.js";

// Custom headers: the RFC 9110 token grammar for names, the names reserved to Sluice and to the
// connection, values that cannot smuggle a line break, and masking that never loses a secret.

const TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const tokenArb = fc.string({ unit: fc.constantFrom(...TCHAR), minLength: 1, maxLength: 100 });
// Any UTF-16 code unit that is not a tchar: separators, controls, space, non-ASCII.
const nonTchar = fc
  .integer({ min: 0, max: 0xffff })
  .map((c) => String.fromCharCode(c))
  .filter((c) => !TCHAR.includes(c));

describe("header names", () => {
  test("every RFC 9110 token of 1–100 characters is a valid name", () => {
    fc.assert(fc.property(tokenArb, (name) => isHeaderName(name)));
  });

  test("a name with any non-token character is refused, and the refusal names the header", () => {
    fc.assert(
      fc.property(tokenArb, nonTchar, fc.nat(), (name, bad, at) => {
        const i = at % (name.length + 1);
        const withBad = name.slice(0, i) + bad + name.slice(i);
        if (withBad.length > 100) return;
        assert.equal(isHeaderName(withBad), false, JSON.stringify(withBad));
        const problems = checkCustomHeaders({ [withBad]: "v" }, undefined);
        assert.equal(problems.length, 1, JSON.stringify(problems));
        assert.equal(problems[0]!.field, `headers.${withBad}`);
        assert.match(problems[0]!.message, /not a valid header name/);
      }),
    );
  });

  test("empty and over-long names are refused", () => {
    assert.equal(isHeaderName(""), false);
    assert.equal(isHeaderName("x".repeat(101)), false);
    assert.equal(isHeaderName("x".repeat(100)), true);
    assert.deepEqual(
      checkCustomHeaders({ "": "v" }, undefined).map((p) => p.field),
      ['headers.""'],
    );
    const long = checkCustomHeaders({ ["x".repeat(300)]: "v" }, undefined);
    assert.equal(long.length, 1);
    assert.match(long[0]!.message, /longer than 100/);
    assert.ok(long[0]!.field.length < 110, "the field shows a cut name");
  });

  test("reserved names are refused in any case, each with its reason", () => {
    const reserved = [
      "webhook-id",
      "Webhook-Signature",
      "WEBHOOK-TIMESTAMP",
      "webhook-anything",
      "Content-Type",
      "content-length",
      "Host",
      "User-Agent",
      "Expect",
      "Connection",
      "keep-alive",
      "Proxy-Connection",
      "Transfer-Encoding",
      "TE",
      "Trailer",
      "Upgrade",
      "Proxy-Authenticate",
      "Proxy-Authorization",
    ];
    for (const name of reserved) {
      const problems = checkCustomHeaders({ [name]: "v" }, undefined);
      assert.equal(problems.length, 1, name);
      assert.equal(problems[0]!.field, `headers.${name}`);
      assert.match(problems[0]!.message, /reserved|hop-by-hop/, name);
    }
    assert.match(reservedReason("webhook-id")!, /signs/);
    assert.match(reservedReason("TE")!, /hop-by-hop/);
    for (const name of ["Authorization", "X-Api-Key", "webhook", "webhooks-id", "X-Webhook-Id", "Content-Encoding", "Accept"]) {
      assert.equal(reservedReason(name), null, name);
    }
  });

  test("the same name twice in different cases is refused", () => {
    const problems = checkCustomHeaders({ "X-Tenant": "a", "x-tenant": "b" }, undefined);
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.field, "headers.x-tenant");
    assert.match(problems[0]!.message, /X-Tenant.*case-insensitive/);
  });

  test("every name Sluice sets itself is reserved, so a custom header can never override one", () => {
    const own = buildDeliveryHeaders({ msgId: "m", timestampSeconds: 1, body: "{}", secrets: [], userAgent: "ua" });
    for (const name of Object.keys(own)) assert.notEqual(reservedReason(name), null, name);
    const withCustom = buildDeliveryHeaders({
      msgId: "m",
      timestampSeconds: 1,
      body: "{}",
      secrets: [],
      userAgent: "ua",
      custom: { "X-Tenant": "t1" },
    });
    assert.deepEqual(withCustom, { "X-Tenant": "t1", ...own });
  });
});

describe("header values", () => {
  test("visible ASCII, space and tab are accepted", () => {
    const valueArb = fc
      .string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 200 })
      .map((v) => v.trim());
    fc.assert(fc.property(valueArb, (v) => headerValueProblem(v) === null && headerValueProblem(`a\t${v} b`) === null));
    assert.equal(headerValueProblem(""), null);
    assert.equal(headerValueProblem("x".repeat(4096)), null);
  });

  test("CR, LF, NUL, other controls and non-ASCII are refused without the value being quoted", () => {
    const secret = "sk_live_verysecret";
    for (const bad of ["\r", "\n", "\r\nX-Injected: 1", "\u0000", "\u007f", "\u0001", "é", "€", "\u2028"]) {
      const problems = checkCustomHeaders({ Authorization: `Bearer ${secret}${bad}tail` }, undefined);
      assert.equal(problems.length, 1, JSON.stringify(bad));
      assert.equal(problems[0]!.field, "headers.Authorization");
      assert.match(problems[0]!.message, /visible ASCII/);
      assert.ok(!JSON.stringify(problems).includes(secret), "a problem quotes the value");
    }
  });

  test("over 4 KiB, surrounding whitespace and non-strings are refused", () => {
    assert.match(headerValueProblem("x".repeat(4097))!, /longer than 4096/);
    assert.match(headerValueProblem(" x")!, /whitespace/);
    assert.match(headerValueProblem("x\t")!, /whitespace/);
    assert.match(headerValueProblem(42)!, /string/);
  });

  test("the mask itself is refused as a value, saying there is nothing stored to keep", () => {
    assert.match(headerValueProblem(HEADER_MASK)!, /no stored secret value/);
  });
});

describe("secret_headers", () => {
  test("names must be tokens and listed once (case-insensitively)", () => {
    assert.deepEqual(checkCustomHeaders(undefined, ["X-Key", "X-Other"]), []);
    const problems = checkCustomHeaders(undefined, ["X-Key", "bad name", "x-key"]);
    assert.deepEqual(
      problems.map((p) => p.field),
      ["secret_headers[1]", "secret_headers[2]"],
    );
    assert.match(problems[1]!.message, /twice/);
  });

  test("a clean config has no problems, up to the header count limit", () => {
    const many = Object.fromEntries(Array.from({ length: MAX_CUSTOM_HEADERS }, (_, i) => [`X-H${i}`, `v${i}`]));
    assert.deepEqual(checkCustomHeaders(many, ["X-H1"]), []);
  });
});

describe("masking", () => {
  const stored = { Authorization: "Bearer s3cret", "X-Api-Key": "k3y", "X-Tenant": "t1" };

  test("authorization is always masked, secret_headers by name in any case, others shown", () => {
    assert.deepEqual(maskHeaders(stored, ["x-api-KEY"]), { Authorization: HEADER_MASK, "X-Api-Key": HEADER_MASK, "X-Tenant": "t1" });
    assert.deepEqual(maskHeaders(stored, []), { Authorization: HEADER_MASK, "X-Api-Key": "k3y", "X-Tenant": "t1" });
    assert.equal(isSecretHeader("AUTHORIZATION", []), true);
    assert.equal(isSecretHeader("X-Tenant", ["X-Api-Key"]), false);
  });

  test("sending the mask back keeps each stored secret; other values are taken as sent", () => {
    const sent = { authorization: HEADER_MASK, "X-Api-Key": HEADER_MASK, "X-Tenant": "t2" };
    assert.deepEqual(restoreMasked(sent, stored, ["X-Api-Key"]), { authorization: "Bearer s3cret", "X-Api-Key": "k3y", "X-Tenant": "t2" });
  });

  test("a mask that stands for nothing stored (or for a value that was shown) stays, and is refused", () => {
    const sent = { "X-Tenant": HEADER_MASK, "X-New": HEADER_MASK };
    const restored = restoreMasked(sent, stored, ["X-Api-Key"]);
    assert.deepEqual(restored, sent);
    assert.deepEqual(
      checkCustomHeaders(restored, undefined).map((p) => p.field),
      ["headers.X-Tenant", "headers.X-New"],
    );
  });

  test("mask → restore round-trips any config", () => {
    const name = tokenArb.filter((n) => reservedReason(n) === null);
    fc.assert(
      fc.property(
        fc.dictionary(name, fc.string({ maxLength: 20 }), { maxKeys: 10 }),
        fc.array(name, { maxLength: 5 }),
        (headers, secret) => {
          const lowerSeen = new Set<string>();
          const unique = Object.fromEntries(
            Object.entries(headers).filter(([n]) => !lowerSeen.has(n.toLowerCase()) && lowerSeen.add(n.toLowerCase())),
          );
          assert.deepEqual(restoreMasked(maskHeaders(unique, secret), unique, secret), unique);
        },
      ),
    );
  });
});

describe("logger", () => {
  test("redacts header maps and Postgres 'Failing row contains' details, keeps other details", () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const log = createLogger({ logLevel: "info", logFormat: "json" }, { stream, isTTY: false });
    const rowErr = Object.assign(new Error('new row violates check constraint "x"'), {
      detail: "Failing row contains (dst_1, Bearer s3cret-value)",
    });
    const keyErr = Object.assign(new Error("duplicate key"), { detail: "Key (id)=(dst_1) already exists." });
    log.error({ err: rowErr }, "request failed");
    log.error({ err: keyErr }, "request failed");
    log.info({ headers: { authorization: "Bearer s3cret-value" }, config: { headers: { "X-Key": "s3cret-value" } } }, "whole objects");
    const all = lines.join("");
    assert.ok(!all.includes("s3cret-value"), all);
    assert.ok(all.includes("Key (id)=(dst_1) already exists."), all);
    assert.equal(lines.length, 3);
  });
});
