import { test } from "node:test";
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { generateSecret, isValidSecret, signatureHeader } from "../../src/delivery/sign.js";
import { buildDeliveryHeaders } from "../../src/delivery/sender.js";

const body = JSON.stringify({ type: "order.created", timestamp: "2024-01-01T00:00:00Z", data: { id: 42, note: "ünïcødé ✓" } });

function headersFor(secrets: string[], msgId: string, ts: number, payload: string): Record<string, string> {
  return { "webhook-id": msgId, "webhook-timestamp": String(ts), "webhook-signature": signatureHeader(secrets, msgId, ts, payload) };
}

test("generated secrets are whsec_ + base64 of 24 bytes, distinct, and valid", () => {
  const a = generateSecret();
  const b = generateSecret();
  assert.match(a, /^whsec_[A-Za-z0-9+/]{32}$/);
  assert.equal(Buffer.from(a.slice(6), "base64").length, 24);
  assert.notEqual(a, b);
  assert.equal(isValidSecret(a), true);
});

test("isValidSecret accepts 24-64 decoded bytes of strict base64 only", () => {
  const of = (n: number) => "whsec_" + Buffer.alloc(n, 7).toString("base64");
  assert.equal(isValidSecret(of(24)), true);
  assert.equal(isValidSecret(of(32)), true);
  assert.equal(isValidSecret(of(64)), true);
  assert.equal(isValidSecret(of(23)), false);
  assert.equal(isValidSecret(of(65)), false);
  assert.equal(isValidSecret(of(32).slice(6)), false, "missing prefix");
  assert.equal(isValidSecret("whsec_"), false);
  assert.equal(isValidSecret("whsec_" + "!".repeat(40)), false);
  assert.equal(isValidSecret(of(32) + " "), false);
  assert.equal(isValidSecret("WHSEC_" + of(32).slice(6)), false);
});

test("a signature verifies with the standardwebhooks library", () => {
  const secret = generateSecret();
  const ts = Math.floor(Date.now() / 1000);
  const headers = headersFor([secret], "evt_123", ts, body);
  assert.match(headers["webhook-signature"]!, /^v1,[A-Za-z0-9+/]{43}=$/);
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
});

test("during rotation each secret alone verifies the multi-signature header", () => {
  const oldSecret = generateSecret();
  const newSecret = generateSecret();
  const ts = Math.floor(Date.now() / 1000);
  const headers = headersFor([oldSecret, newSecret], "evt_rot", ts, body);
  assert.equal(headers["webhook-signature"]!.split(" ").length, 2);
  assert.doesNotThrow(() => new Webhook(oldSecret).verify(body, headers));
  assert.doesNotThrow(() => new Webhook(newSecret).verify(body, headers));
  assert.throws(() => new Webhook(generateSecret()).verify(body, headers));
});

test("a tampered body, id or timestamp fails verification", () => {
  const secret = generateSecret();
  const ts = Math.floor(Date.now() / 1000);
  const headers = headersFor([secret], "evt_1", ts, body);
  const wh = new Webhook(secret);
  assert.throws(() => wh.verify(body.replace("42", "43"), headers));
  assert.throws(() => wh.verify(body, { ...headers, "webhook-id": "evt_2" }));
  assert.throws(() => wh.verify(body, { ...headers, "webhook-timestamp": String(ts + 1) }));
});

test("buildDeliveryHeaders gives the Standard Webhooks header set", () => {
  const secret = generateSecret();
  const ts = Math.floor(Date.now() / 1000);
  const headers = buildDeliveryHeaders({ msgId: "evt_h", timestampSeconds: ts, body, secrets: [secret], userAgent: "Sluice/0.1" });
  assert.deepEqual(Object.keys(headers).sort(), ["content-type", "user-agent", "webhook-id", "webhook-signature", "webhook-timestamp"]);
  assert.equal(headers["content-type"], "application/json");
  assert.equal(headers["user-agent"], "Sluice/0.1");
  assert.equal(headers["webhook-id"], "evt_h");
  assert.equal(headers["webhook-timestamp"], String(ts));
  assert.doesNotThrow(() => new Webhook(secret).verify(body, headers));
});
