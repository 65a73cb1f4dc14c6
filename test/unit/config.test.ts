import { test } from "node:test";
import assert from "node:assert/strict";
import { closestMatch, editDistance, loadConfig, unknownEnvSettings } from "../../src/config.js";
import { ConfigError } from "../../src/errors.js";
import { Writable } from "node:stream";
import { createLogger, resolveLogFormat } from "../../src/logger.js";

const OPTIONS = ["host", "port", "data-dir", "concurrency", "shard", "log-level", "log-format", "metrics-port"];

test("a transposition is one edit", () => {
  assert.equal(editDistance("prot", "port"), 1);
  assert.equal(editDistance("port", "port"), 0);
  assert.equal(editDistance("", "abc"), 3);
  assert.equal(editDistance("kitten", "sitting"), 3);
});

test("closestMatch suggests a near option and nothing for a far word", () => {
  assert.equal(closestMatch("prot", OPTIONS), "port");
  assert.equal(closestMatch("data_dir", OPTIONS), "data-dir");
  assert.equal(closestMatch("LOG-LEVL", OPTIONS), "log-level");
  assert.equal(closestMatch("xyzzy", OPTIONS), undefined);
  assert.equal(closestMatch("verbose", OPTIONS), undefined);
});

test("unknown SLUICE_* variables are named with the setting they probably meant", () => {
  const found = unknownEnvSettings({
    SLUICE_PORTT: "1",
    SLUICE_PORT: "3000",
    SLUICE_WORKER_CONCURRENCE: "4",
    SLUICE_SOMETHING_ELSE_ENTIRELY: "x",
    SLUICE_TEST_DATABASE_URL: "postgres://x",
    SLUICE_BENCH_SECONDS: "3",
    SLUICE_PG_FSYNC: "1",
    DATABASE_URL: "postgres://x",
    PATH: "/bin",
  });
  assert.deepEqual(found, [
    { name: "SLUICE_PORTT", suggestion: "SLUICE_PORT" },
    { name: "SLUICE_SOMETHING_ELSE_ENTIRELY", suggestion: undefined },
    { name: "SLUICE_WORKER_CONCURRENCE", suggestion: "SLUICE_WORKER_CONCURRENCY" },
  ]);
  assert.deepEqual(unknownEnvSettings({ SLUICE_PORT: "1", SLUICE_LOG_FORMAT: "json", SLUICE_DB_CONNECT_WAIT_SECONDS: "5" }), []);
});

function problemsOf(env: Record<string, string>, flags: Record<string, string> = {}): string {
  try {
    loadConfig(flags, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message;
  }
  assert.fail("expected a ConfigError");
}

test("a malformed DATABASE_URL is reported without repeating it (it holds a password)", () => {
  for (const url of ["postgres://app:hunter2@db:notaport/app", "mysql://app:hunter2@db/app", "app:hunter2@db/app"]) {
    const message = problemsOf({ DATABASE_URL: url });
    assert.match(message, /DATABASE_URL/);
    assert.match(message, /postgres:\/\/user:password@host:5432\/database/);
    assert.ok(!message.includes("hunter2"), message);
  }
  assert.match(problemsOf({ DATABASE_URL: "mysql://app:hunter2@db/app" }), /mysql:\/\/ URL/);
});

test("a well-formed DATABASE_URL is kept; an empty one means the embedded store", () => {
  assert.equal(loadConfig({}, { DATABASE_URL: "postgresql://a:b@h:5433/d" }).databaseUrl, "postgresql://a:b@h:5433/d");
  assert.equal(loadConfig({}, { DATABASE_URL: "" }).databaseUrl, undefined);
});

test("values of settings that hold no secret are shown in the problem", () => {
  const message = problemsOf({ SLUICE_PORT: "http", SLUICE_DB_CONNECT_WAIT_SECONDS: "-1" }, { "log-format": "fancy" });
  assert.match(message, /SLUICE_PORT="http"/);
  assert.match(message, /SLUICE_DB_CONNECT_WAIT_SECONDS="-1"/);
  assert.match(message, /--log-format="fancy": must be one of auto, json, pretty/);
});

test("log format: auto is pretty on a terminal only", () => {
  const c = loadConfig({}, {});
  assert.equal(c.logFormat, "auto");
  assert.equal(c.dbConnectWaitSeconds, 30);
  assert.equal(resolveLogFormat("auto", true), "pretty");
  assert.equal(resolveLogFormat("auto", false), "json");
  assert.equal(resolveLogFormat("json", true), "json");
  assert.equal(resolveLogFormat("pretty", false), "pretty");
});

function capture(): { stream: Writable; text: () => string } {
  let text = "";
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

test("JSON log lines carry level names and ISO timestamps", () => {
  const out = capture();
  createLogger({ logLevel: "info", logFormat: "json" }, { stream: out.stream, isTTY: false }).warn({ destination_id: "dst_1" }, "hello");
  const line = JSON.parse(out.text().trim()) as Record<string, unknown>;
  assert.equal(line.level, "warn");
  assert.equal(line.msg, "hello");
  assert.equal(line.destination_id, "dst_1");
  assert.equal(line.pid, process.pid);
  assert.match(String(line.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

test("pretty log lines are for people: not JSON, level and message readable", async () => {
  const out = capture();
  createLogger({ logLevel: "info", logFormat: "pretty" }, { stream: out.stream, isTTY: false }).info(
    { destination_id: "dst_1" },
    "hello there",
  );
  // pino-pretty is a transform stream: its line arrives a tick later.
  for (let i = 0; i < 50 && !out.text().includes("\n"); i++) await new Promise((r) => setImmediate(r));
  const text = out.text();
  assert.match(text, /INFO.*hello there/);
  assert.match(text, /destination_id: "dst_1"/);
  assert.throws(() => JSON.parse(text));
  assert.ok(!text.includes("\u001b["), "no colour codes when not on a terminal");
});

test("the loaded config is frozen all the way down", () => {
  const c = loadConfig({}, { SLUICE_ALLOWED_CIDRS: "10.0.0.0/8" });
  assert.ok(Object.isFrozen(c));
  assert.ok(Object.isFrozen(c.allowedCidrs));
  assert.throws(() => c.allowedCidrs.push("0.0.0.0/0"), TypeError);
});

test("SLUICE_DNS_SERVERS takes IPs with or without a port; anything else says what to give", () => {
  assert.deepEqual(loadConfig({}, {}).dnsServers, []);
  assert.deepEqual(loadConfig({}, { SLUICE_DNS_SERVERS: "10.0.0.2, 10.0.0.3:5353 [2001:db8::1]:53 ::1" }).dnsServers, [
    "10.0.0.2",
    "10.0.0.3:5353",
    "[2001:db8::1]:53",
    "::1",
  ]);
  for (const bad of ["dns.example.com", "10.0.0.2:0", "10.0.0.2:99999", "[::1"]) {
    assert.match(problemsOf({ SLUICE_DNS_SERVERS: bad }), /is not a nameserver: give an IP, ip:port or \[ipv6\]:port/);
  }
  assert.equal(loadConfig({}, { SLUICE_MAX_SOCKETS_PER_ORIGIN: "" }).maxSocketsPerOrigin, undefined);
  assert.equal(loadConfig({}, { SLUICE_MAX_SOCKETS_PER_ORIGIN: "64" }).maxSocketsPerOrigin, 64);
});
