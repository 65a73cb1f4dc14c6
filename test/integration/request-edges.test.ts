import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { BACKENDS, startSluice, type ApiAnswer, type TestSluice } from "../helpers/sluice.js";
import type { ApiError, Destination, EventAccepted, Page, ValidationFailed } from "../helpers/api-types.js";
import { drainLimitBytes } from "../../src/api/body.js";

// The edges of what a request may carry, over real HTTP: bodies that are not JSON (415), bodies
// over the limit (413, which must reach a client that sends its whole body before reading, and
// must not keep the server reading for ever), strings Postgres cannot store and nesting that
// overflows stacks (422 naming the field), prototype keys, and messages that name both ends of
// a range.

const PAYLOAD_LIMIT = 2048;
const BODY_LIMIT = PAYLOAD_LIMIT + 64 * 1024; // server.ts: the payload limit plus room for the envelope
const MIB = 1_048_576;

interface RawAnswer {
  status: number | null;
  headers: Record<string, string>;
  body: unknown;
  /** The error a write met (EPIPE, ECONNRESET, …), if one did. */
  writeError: string | null;
  bytesWritten: number;
}

/**
 * A POST over a bare socket that writes its whole body (each chunk once the previous one is
 * flushed, as a client that reads only after sending does) and then reads the answer. `total`
 * bytes of body, with a Content-Length or chunked; stops writing at the first write error.
 */
async function rawPost(
  base: string,
  path: string,
  opts: { total: number; chunked: boolean; headers?: Record<string, string>; declaredLength?: number; chunkBytes?: number },
): Promise<RawAnswer> {
  const { hostname, port } = new URL(base);
  const socket = net.connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  const received: Buffer[] = [];
  let writeError: string | null = null;
  socket.on("data", (c: Buffer) => received.push(c));
  socket.on("error", (e: NodeJS.ErrnoException) => (writeError ??= e.code ?? e.message));
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  const write = (data: Buffer | string) =>
    new Promise<boolean>((resolve) => {
      if (socket.destroyed || writeError) return resolve(false);
      socket.write(data, (err) => {
        if (err) writeError ??= (err as NodeJS.ErrnoException).code ?? err.message;
        resolve(!err);
      });
    });
  const head = {
    host: `${hostname}:${port}`,
    "content-type": "application/json",
    ...(opts.chunked ? { "transfer-encoding": "chunked" } : { "content-length": String(opts.declaredLength ?? opts.total) }),
    ...opts.headers,
  };
  await write(
    `POST ${path} HTTP/1.1\r\n${Object.entries(head)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("")}\r\n`,
  );
  const chunk = Buffer.alloc(opts.chunkBytes ?? 16 * 1024, 0x20); // spaces: a JSON body that is just long
  let bytesWritten = 0;
  while (bytesWritten < opts.total && !writeError && !socket.destroyed) {
    const n = Math.min(chunk.length, opts.total - bytesWritten);
    const piece = chunk.subarray(0, n);
    const ok = await write(opts.chunked ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), piece, Buffer.from("\r\n")]) : piece);
    if (!ok) break;
    bytesWritten += n;
    await new Promise((r) => setImmediate(r)); // let an early answer (and a close) arrive meanwhile
  }
  if (opts.chunked && !writeError) await write("0\r\n\r\n");
  // The answer: the server closes after it (connection: close), or we stop after a second of silence.
  await Promise.race([closed, new Promise((r) => setTimeout(r, 10_000))]);
  socket.destroy();
  const text = Buffer.concat(received).toString("utf8");
  const [headText = "", ...rest] = text.split("\r\n\r\n");
  const [statusLine = "", ...headerLines] = headText.split("\r\n");
  const status = /^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1];
  const headers = Object.fromEntries(
    headerLines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
  );
  let body: unknown = rest.join("\r\n\r\n");
  try {
    body = JSON.parse(body as string);
  } catch {
    /* not JSON: keep the text */
  }
  return { status: status ? Number(status) : null, headers, body, writeError, bytesWritten };
}

/** node:http with a body of `total` bytes, chunked (no Content-Length) or not. */
function nodePost(
  base: string,
  path: string,
  key: string,
  total: number,
  chunked: boolean,
): Promise<{ status: number | string; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: hostname,
        port,
        path,
        method: "POST",
        agent: false,
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          ...(chunked ? {} : { "content-length": String(total) }),
        },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", (e: NodeJS.ErrnoException) => resolve({ status: `response ${e.code ?? e.message}`, body }));
      },
    );
    req.on("error", (e: NodeJS.ErrnoException) => resolve({ status: e.code ?? e.message, body: "" }));
    const piece = Buffer.alloc(64 * 1024, 0x20);
    for (let sent = 0; sent < total; sent += piece.length) req.write(piece.subarray(0, Math.min(piece.length, total - sent)));
    req.end();
  });
}

function assertTooLarge(status: unknown, body: unknown, what: string) {
  assert.equal(status, 413, `${what}: ${JSON.stringify(body)}`);
  assert.equal((body as ApiError).error.code, "SLUICE_REQUEST_TOO_LARGE", what);
  assert.match((body as ApiError).error.message, /larger than allowed/);
}

describe("request bodies (store-independent; embedded)", () => {
  let s: TestSluice;
  before(async () => {
    s = await startSluice("embedded", { worker: false, env: { SLUICE_MAX_PAYLOAD_BYTES: String(PAYLOAD_LIMIT) } });
  });
  after(async () => {
    await s?.stop();
  });
  const auth = () => ({ authorization: `Bearer ${s.apiKey}` });
  const destinationCount = async () => (await s.api<Page<Destination>>("GET", "/v1/destinations?limit=1000")).body.data.length;

  test("JSON in another charset than UTF-8 is 415", async () => {
    const r = await fetch(`${s.url}/v1/destinations`, {
      method: "POST",
      headers: { ...auth(), "content-type": "application/json; charset=utf-16" },
      body: JSON.stringify({ url: "https://example.com/utf16" }),
    });
    assert.equal(r.status, 415);
    assert.equal(((await r.json()) as ApiError).error.code, "SLUICE_REQUEST_UNSUPPORTED_MEDIA_TYPE");
  });

  test("a body that is not application/json is 415 with the stable code, and writes nothing", async () => {
    const before = await destinationCount();
    const json = JSON.stringify({ url: "https://example.com" });
    // What fetch() sends for a string body: text/plain;charset=UTF-8.
    const plain = await fetch(`${s.url}/v1/destinations`, { method: "POST", headers: auth(), body: json });
    assert.equal(plain.status, 415);
    const err = (await plain.json()) as ApiError;
    assert.equal(err.error.code, "SLUICE_REQUEST_UNSUPPORTED_MEDIA_TYPE");
    assert.match(err.error.message, /Content-Type: application\/json/);
    for (const type of [
      "application/x-www-form-urlencoded",
      "text/json",
      "application/vnd.api+json",
      "application/jsonx",
      "multipart/form-data; boundary=x",
    ]) {
      const r = await s.api<ApiError>("POST", "/v1/destinations", json, { headers: { "content-type": type } });
      assert.equal(r.status, 415, type);
      assert.equal(r.body.error.code, "SLUICE_REQUEST_UNSUPPORTED_MEDIA_TYPE", type);
    }
    // A body without any Content-Type is not JSON either.
    const { hostname, port } = new URL(s.url);
    const untyped = await new Promise<{ status?: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: hostname, port, path: "/v1/destinations", method: "POST", headers: auth() }, (res) => {
        let body = "";
        res.on("data", (c) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode, body }));
      });
      req.on("error", reject);
      req.end(json);
    });
    assert.equal(untyped.status, 415, untyped.body);
    assert.equal(await destinationCount(), before);
    // JSON is JSON whatever its spelling or parameters.
    for (const type of ["application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8"]) {
      const r = await s.api("POST", "/v1/destinations", { url: "https://example.com/typed" }, { headers: { "content-type": type } });
      assert.equal(r.status, 201, `${type}: ${JSON.stringify(r.body)}`);
    }
  });

  test("routes without a body, or with an optional one, take no body with any Content-Type or none", async () => {
    const d = (await s.api<Destination>("POST", "/v1/destinations", { url: "https://example.com/optional" })).body;
    const call = (method: string, path: string, headers: Record<string, string>, body?: string) =>
      fetch(`${s.url}${path}`, { method, headers: { ...auth(), ...headers }, body });
    for (const [headers, body] of [
      [{}, undefined],
      [{ "content-type": "text/plain" }, ""],
      [{ "content-type": "application/json" }, ""],
      [{ "content-type": "application/json" }, "{}"],
    ] as const) {
      const what = `${JSON.stringify(headers)} ${JSON.stringify(body)}`;
      const paused = await call("POST", `/v1/destinations/${d.id}/pause`, headers, body);
      assert.equal(paused.status, 200, `pause ${what}: ${await paused.text()}`);
      const resumed = await call("POST", `/v1/destinations/${d.id}/resume`, headers, body);
      assert.equal(resumed.status, 200, `resume ${what}: ${await resumed.text()}`);
    }
    // An optional body that is there is still JSON only.
    const typed = await call("POST", `/v1/destinations/${d.id}/pause`, { "content-type": "text/plain" }, '{"reason":"x"}');
    assert.equal(typed.status, 415);
    const got = await call("GET", `/v1/destinations/${d.id}`, { "content-type": "text/plain" });
    assert.equal(got.status, 200);
    const other = (await s.api<Destination>("POST", "/v1/destinations", { url: "https://example.com/deleted" })).body;
    const deleted = await call("DELETE", `/v1/destinations/${other.id}`, { "content-type": "application/json" });
    assert.ok(deleted.status >= 200 && deleted.status < 300, `DELETE with an empty JSON body: ${deleted.status} ${await deleted.text()}`);

    // A route that needs a body says how to send one.
    const none = await call("POST", "/v1/destinations", {});
    assert.equal(none.status, 422);
    const noneBody = (await none.json()) as ValidationFailed;
    assert.deepEqual(noneBody.error.details, [
      { field: "body", message: "is required: send a JSON object with 'Content-Type: application/json'" },
    ]);
    const empty = await call("POST", "/v1/destinations", { "content-type": "application/json" }, "");
    assert.equal(empty.status, 400);
    assert.equal(((await empty.json()) as ApiError).error.code, "SLUICE_REQUEST_EMPTY_BODY");
    const emptyText = await call("POST", "/v1/destinations", { "content-type": "text/plain" }, "");
    assert.equal(emptyText.status, 415);
  });

  test("a body over the limit answers 413 to a client that sends it whole before reading (raw socket, never a reset)", async () => {
    for (let i = 0; i < 10; i++) {
      for (const chunked of [false, true]) {
        const r = await rawPost(s.url, "/v1/events", { total: 5 * BODY_LIMIT, chunked, headers: auth() });
        const what = `${chunked ? "chunked" : "content-length"} #${i}`;
        assert.equal(r.writeError, null, `${what}: the server closed before the body was sent (${r.writeError})`);
        assert.equal(r.bytesWritten, 5 * BODY_LIMIT, what);
        assertTooLarge(r.status, r.body, what);
        assert.match(r.headers["content-type"] ?? "", /application\/json/);
      }
    }
  });

  test("40 fetch() and 40 node:http clients (with and without Content-Length) all see 413 with the JSON error", async () => {
    const big = JSON.stringify({ type: "a.b", payload: "x".repeat(3 * BODY_LIMIT) });
    const outcomes: string[] = [];
    for (let i = 0; i < 40; i++) {
      try {
        const r = await fetch(`${s.url}/v1/events`, {
          method: "POST",
          headers: { ...auth(), "content-type": "application/json" },
          body: big,
        });
        const body: unknown = await r.json();
        assertTooLarge(r.status, body, `fetch #${i}`);
        outcomes.push("413");
      } catch (err) {
        outcomes.push(`fetch #${i}: ${String((err as { cause?: unknown }).cause ?? err)}`);
      }
      const chunked = i % 2 === 0;
      const n = await nodePost(s.url, "/v1/events", s.apiKey, 3 * BODY_LIMIT, chunked);
      if (n.status === 413) assertTooLarge(n.status, JSON.parse(n.body), `node:http #${i}`);
      outcomes.push(n.status === 413 ? "413" : `node:http ${chunked ? "chunked" : "content-length"} #${i}: ${n.status}`);
    }
    assert.deepEqual(
      outcomes.filter((o) => o !== "413"),
      [],
    );
    // The batch route has its own, larger limit: a body under it but over the events route's is taken.
    const events = Array.from({ length: 100 }, () => ({ type: "a.b", payload: "y".repeat(PAYLOAD_LIMIT - 100) }));
    assert.ok(JSON.stringify({ events }).length > BODY_LIMIT);
    const batch = await s.api("POST", "/v1/events/batch", { events });
    assert.equal(batch.status, 202, JSON.stringify(batch.body).slice(0, 300));
  });

  test("a client that never stops sending is cut off after a bounded read, and the server keeps serving", async () => {
    const drain = drainLimitBytes(BODY_LIMIT);
    // Kernel buffers on both ends hold a few MiB more than the server read.
    const slack = 32 * MIB;
    const endless = await rawPost(s.url, "/v1/events", { total: 512 * MIB, chunked: true, headers: auth(), chunkBytes: MIB });
    assert.ok(endless.writeError !== null, "the server read 512 MiB");
    assert.ok(endless.bytesWritten < drain + slack, `the server read ${endless.bytesWritten} bytes; the bound is ${drain}`);

    // Content-Length already past the bound: 413 at once, without waiting for the body.
    const declared = await rawPost(s.url, "/v1/events", { total: 0, declaredLength: 500 * MIB, chunked: false, headers: auth() });
    assertTooLarge(declared.status, declared.body, "declared 500 MiB");
    assert.equal(declared.headers.connection, "close");

    // Refused before the body is read at all (no key): Node would drop the rest of it for as long as it came.
    const unauthorized = await rawPost(s.url, "/v1/events", { total: 512 * MIB, chunked: true, chunkBytes: MIB });
    assert.equal(unauthorized.status, 401);
    assert.ok(unauthorized.bytesWritten < drain + slack, `the server read ${unauthorized.bytesWritten} bytes after its 401`);

    const health = await fetch(`${s.url}/healthz`);
    assert.equal(health.status, 200);
  });

  test("nesting past the bound is 422 naming the depth and the limit, before parsing; within it is taken", async () => {
    for (const depth of [300, 5_000, 12_000, 30_000]) {
      const body = `{"type":"a.b","payload":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;
      const r = await s.api<ValidationFailed>("POST", "/v1/events", body);
      assert.equal(r.status, 422, `${depth}: ${JSON.stringify(r.body).slice(0, 300)}`);
      assert.equal(r.body.error.code, "SLUICE_VALIDATION_FAILED");
      assert.equal(r.body.error.details[0]!.field, "body");
      assert.match(r.body.error.details[0]!.message, new RegExp(`nests ${depth} levels.* at most 256`));
    }
    const ok = await s.api<EventAccepted>("POST", "/v1/events", `{"type":"a.b","payload":${"[".repeat(20)}${"]".repeat(20)}}`);
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
    const malformed = await s.api<ApiError>("POST", "/v1/destinations", '{"url": ');
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error.code, "SLUICE_REQUEST_MALFORMED_JSON");
  });

  test("prototype keys are refused with 422 naming the field; an ordinary 'constructor' field is kept", async () => {
    for (const [body, field] of [
      ['{"type":"a.b","payload":{"__proto__":{"admin":true}}}', "payload.__proto__"],
      ['{"url":"https://example.com","\\u005f_proto__":{"admin":true}}', "__proto__"],
      ['{"type":"a.b","payload":{"constructor":{"prototype":{"admin":true}}}}', "payload.constructor.prototype"],
    ] as const) {
      const r = await s.api<ValidationFailed>("POST", body.includes("url") ? "/v1/destinations" : "/v1/events", body);
      assert.equal(r.status, 422, body);
      assert.deepEqual(
        r.body.error.details.map((d) => d.field),
        [field],
      );
    }
    const kept = await s.api<EventAccepted>("POST", "/v1/events", { type: "a.b", payload: { constructor: "Acme" } });
    assert.equal(kept.status, 202);
    const ev = await s.api<{ payload: unknown }>("GET", `/v1/events/${kept.body.id}`);
    assert.deepEqual(ev.body.payload, { constructor: "Acme" });
  });

  test("422 messages name both ends of a range, in plain digits", async () => {
    const cases: [string, string, unknown, string, RegExp][] = [
      [
        "POST",
        "/v1/destinations",
        { url: "https://example.com", timeout_seconds: 0 },
        "timeout_seconds",
        /^must be a whole number between 1 and 60$/,
      ],
      ["POST", "/v1/destinations", { url: "https://example.com", timeout_seconds: "5" }, "timeout_seconds", /between 1 and 60/],
      [
        "POST",
        "/v1/destinations",
        { url: "https://example.com", max_concurrency: 5000 },
        "max_concurrency",
        /^must be a whole number between 1 and 1000$/,
      ],
      [
        "POST",
        "/v1/destinations",
        { url: "https://example.com", rate_limit: { max_per_second: 0 } },
        "rate_limit.max_per_second",
        /^must be a number between 0\.001 and 100000$/,
      ],
      ["POST", "/v1/portal-sessions", { ttl_seconds: 59 }, "ttl_seconds", /^must be a whole number between 60 and 86400$/],
      ["POST", "/v1/portal-sessions", { destination_ids: [] }, "destination_ids", /^must have between 1 and \d+ items$/],
      ["GET", "/v1/destinations?limit=0", undefined, "query.limit", /^must be a whole number between 1 and 1000$/],
      [
        "POST",
        "/v1/events",
        { type: "a.b", payload: {}, occurred_at: "1969-12-31T23:59:59Z" },
        "occurred_at",
        /^must be a time between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z$/,
      ],
      [
        "GET",
        "/v1/events?since=0001-01-01T00:00:00Z",
        undefined,
        "query.since",
        /^must be a time between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z$/,
      ],
    ];
    for (const [method, path, body, field, message] of cases) {
      const r: ApiAnswer<ValidationFailed> = await s.api(method, path, body);
      const what = `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`;
      assert.equal(r.status, 422, what);
      const detail = r.body.error.details.find((d) => d.field === field);
      assert.ok(detail, what);
      assert.match(detail.message, message, what);
      assert.doesNotMatch(r.body.error.message, /\de[-+]?\d/, `exponent notation in ${what}`);
    }
  });
});

for (const backend of BACKENDS) {
  describe(`strings Postgres cannot store, on ${backend} Postgres`, () => {
    let s: TestSluice;
    before(async () => {
      s = await startSluice(backend, { worker: false });
    });
    after(async () => {
      await s?.stop();
    });

    test("path ids and query strings: NUL is 422 naming the parameter, a bad %-escape 400, in the contract's shape", async () => {
      for (const path of ["/v1/destinations/%00", "/v1/events/a%00b", "/v1/deliveries/%00/attempts"]) {
        const r = await s.api<ValidationFailed>("GET", path);
        assert.equal(r.status, 422, path);
        assert.deepEqual(
          r.body.error.details.map((d) => d.field),
          ["params.id"],
        );
      }
      const q = await s.api<ValidationFailed>("GET", "/v1/deliveries?destination_id=%00");
      assert.equal(q.status, 422);
      assert.equal(q.body.error.details[0]!.field, "query.destination_id");
      for (const path of ["/v1/destinations/%", "/v1/destinations/%zz", "/v1/destinations/%ED%A0%80"]) {
        const r = await s.api<ApiError>("GET", path);
        assert.ok(r.status === 400 || r.status === 422, `${path}: ${r.status}`);
        assert.match(r.body.error.code, /^SLUICE_/, path);
      }
      // No route: a 404, whatever the path holds (its params are the router's wildcard).
      const none = await s.api<ApiError>("POST", "/v1/destinations/dst_x/%00/resume", "-1", {
        headers: { "content-type": "application/xml" },
      });
      assert.equal(none.status, 404);
      assert.equal(none.body.error.code, "SLUICE_ROUTE_NOT_FOUND");
      // An id longer than its schema allows is the schema's 422, not the router's 414.
      const long = await s.api<ValidationFailed>("GET", `/v1/events/${"x".repeat(101)}`);
      assert.equal(long.status, 422);
    });

    test("a request line over 16 KiB is 431 in the contract's shape; instants JavaScript cannot read are 422", async () => {
      const big = await fetch(`${s.url}/v1/destinations?cursor=${"x".repeat(17_000)}`, {
        headers: { authorization: `Bearer ${s.apiKey}` },
      });
      assert.equal(big.status, 431);
      assert.equal(((await big.json()) as ApiError).error.code, "SLUICE_REQUEST_HEADERS_TOO_LARGE");
      for (const at of ["2030-12-31T23:59:60Z", "2030-01-01T00:00:00+01"]) {
        const r = await s.api<ValidationFailed>("POST", "/v1/events", { type: "t.x", payload: {}, deliver_at: at });
        assert.equal(r.status, 422, at);
        assert.equal(r.body.error.details[0]!.field, "deliver_at");
      }
      const since = await s.api<ValidationFailed>("GET", "/v1/events?since=2024-12-31T23:59:60Z");
      assert.equal(since.status, 422);
    });

    test("a JSON null payload is taken and delivered as null; 100,000 bad items answer at most 50 problems", async () => {
      const e = await s.api<EventAccepted>("POST", "/v1/events", { type: "t.null", payload: null });
      assert.equal(e.status, 202);
      assert.equal((await s.api<{ payload: unknown }>("GET", `/v1/events/${e.body.id}`)).body.payload, null);
      const r = await s.api<ValidationFailed>("POST", "/v1/destinations", {
        url: "https://example.com/many",
        secret_headers: Array.from({ length: 100_000 }, () => 0),
      });
      assert.equal(r.status, 422);
      assert.ok(r.body.error.details.length <= 50, `${r.body.error.details.length} details`);
    });

    test("NUL and lone surrogates are 422 naming the field path, in every field, and nothing is written", async () => {
      const dst = (await s.api<Destination>("POST", "/v1/destinations", { url: "https://example.com/kept", name: "kept" })).body;
      const count = async () => ({
        destinations: (await s.api<Page<Destination>>("GET", "/v1/destinations?limit=1000")).body.data.length,
        events: (await s.api<Page<unknown>>("GET", "/v1/events?limit=1000")).body.data.length,
      });
      const before = await count();
      // Raw JSON text, so the escapes reach the server as a client would send them.
      const cases: [string, string, string, string, RegExp][] = [
        ["POST", "/v1/destinations", '{"url":"https://example.com","name":"a\\u0000b"}', "name", /NUL character .*base64/],
        ["POST", "/v1/destinations", '{"url":"https://example.com/\\u0000"}', "url", /NUL character/],
        ["POST", "/v1/destinations", '{"url":"https://example.com","name":"\\ud800x"}', "name", /unpaired UTF-16 surrogate \(\\ud800/],
        ["PATCH", `/v1/destinations/${dst.id}`, '{"name":"\\udfff"}', "name", /unpaired UTF-16 surrogate \(\\udfff/],
        ["PATCH", "/v1/tenant", '{"name":"t\\u0000"}', "name", /NUL/],
        ["POST", "/v1/events", '{"type":"a.b","payload":{"items":[{},{},{"name":"\\u0000"}]}}', "payload.items[2].name", /NUL/],
        ["POST", "/v1/events", '{"type":"a.b","payload":{"k\\u0000":1}}', "payload.k\\u0000", /field name .*rename/],
        [
          "POST",
          "/v1/events/batch",
          '{"events":[{"type":"a.b","payload":{}},{"type":"a.b","payload":["\\ud83d"]}]}',
          "events[1].payload[0]",
          /surrogate/,
        ],
      ];
      for (const [method, path, body, field, message] of cases) {
        const r = await s.api<ValidationFailed>(method, path, body);
        const what = `${method} ${path} ${body}: ${JSON.stringify(r.body)}`;
        assert.equal(r.status, 422, what);
        assert.equal(r.body.error.code, "SLUICE_VALIDATION_FAILED", what);
        assert.deepEqual(
          r.body.error.details.map((d) => d.field),
          [field],
          what,
        );
        assert.match(r.body.error.details[0]!.message, message, what);
      }
      assert.deepEqual(await count(), before, "a refused request wrote something");
      assert.equal((await s.api<Destination>("GET", `/v1/destinations/${dst.id}`)).body.name, "kept");
    });

    test("whole characters, escaped as surrogate pairs or not, are stored and read back exactly", async () => {
      const text = "caf\u00e9 \ud83d\ude00 \u0001";
      const escaped = JSON.stringify({ type: "a.b", payload: { text } }).replace(
        /[^\x20-\x7e]/g,
        (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
      );
      const ev = await s.api<EventAccepted>("POST", "/v1/events", escaped);
      assert.equal(ev.status, 202, JSON.stringify(ev.body));
      assert.deepEqual((await s.api<{ payload: unknown }>("GET", `/v1/events/${ev.body.id}`)).body.payload, { text });
      const d = await s.api<Destination>("POST", "/v1/destinations", `{"url":"https://example.com","name":"\\ud83d\\ude00 ok"}`);
      assert.equal(d.status, 201, JSON.stringify(d.body));
      assert.equal(d.body.name, "\ud83d\ude00 ok");
    });
  });
}
