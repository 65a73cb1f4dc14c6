import { test, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { Sender, classifyError, type SendResult } from "../../src/delivery/sender.js";
import { waitFor } from "../helpers/wait-for.js";
import { BlockedAddressError, type NetworkPolicy } from "../../src/delivery/network-guard.js";

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface Receiver {
  port: number;
  url: string;
  requests: Received[];
  connections: number;
  close(): Promise<void>;
}

// A real node:http receiver on 127.0.0.1; `respond` decides the answer after the body is read.
async function startReceiver(respond: (req: Received, res: http.ServerResponse) => void): Promise<Receiver> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const received = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      receiver.requests.push(received);
      respond(received, res);
    });
  });
  server.on("connection", () => receiver.connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const receiver: Receiver = {
    port,
    url: `http://127.0.0.1:${port}`,
    requests: [],
    connections: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return receiver;
}

const privateOk: NetworkPolicy = { allowPrivateNetworks: true, allowedCidrs: [] };
const guarded: NetworkPolicy = { allowPrivateNetworks: false, allowedCidrs: [] };

const senders: Sender[] = [];
const receivers: Receiver[] = [];
after(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await Promise.all(senders.map((s) => s.close()));
});

function newSender(network: NetworkPolicy): Sender {
  const sender = new Sender({ network, userAgent: "Sluice-test/1.0" });
  senders.push(sender);
  return sender;
}

async function receiver(respond: (req: Received, res: http.ServerResponse) => void): Promise<Receiver> {
  const r = await startReceiver(respond);
  receivers.push(r);
  return r;
}

const body = JSON.stringify({ type: "order.created", timestamp: "2024-01-01T00:00:00Z", data: { id: 1 } });
const headers = {
  "content-type": "application/json",
  "webhook-id": "evt_1",
  "webhook-timestamp": "1700000000",
  "webhook-signature": "v1,abc",
};

function post(sender: Sender, url: string, timeoutMs = 2000): Promise<SendResult> {
  return sender.send({ url, body, headers, timeoutMs });
}

const sender = newSender(privateOk);

test("200: posts the body and headers, reads the response and keeps 1 KiB of it", async () => {
  const r = await receiver((_req, res) => res.writeHead(200, { "content-type": "text/plain" }).end("x".repeat(5000)));
  const result = await post(sender, `${r.url}/hooks/in?a=1`);
  assert.equal(result.statusCode, 200);
  assert.equal(result.errorClass, null);
  assert.equal(result.errorMessage, null);
  assert.equal(result.retryAfter, null);
  assert.equal(result.responseBody, "x".repeat(1024));
  assert.ok(result.latencyMs >= 0);
  assert.equal(r.requests.length, 1);
  const got = r.requests[0]!;
  assert.equal(got.method, "POST");
  assert.equal(got.url, "/hooks/in?a=1");
  assert.equal(got.body, body);
  assert.equal(got.headers["content-type"], "application/json");
  assert.equal(got.headers["webhook-id"], "evt_1");
  assert.equal(got.headers["webhook-signature"], "v1,abc");
  assert.equal(got.headers["user-agent"], "Sluice-test/1.0");
});

test("keep-alive: sequential sends to one origin reuse their connections", async () => {
  const r = await receiver((_req, res) => res.end("ok"));
  for (let i = 0; i < 20; i++) assert.equal((await post(sender, r.url)).statusCode, 200);
  assert.equal(r.requests.length, 20);
  // undici's pool may open a second socket before the first reports itself free; never one per request.
  assert.ok(r.connections <= 2, `${r.connections} connections`);
});

test("truncation never splits a UTF-8 character and stays within 1024 bytes", async () => {
  const r = await receiver((_req, res) => res.end("a" + "é".repeat(2000)));
  const result = await post(sender, r.url);
  assert.equal(result.statusCode, 200);
  assert.equal(result.responseBody, "a" + "é".repeat(511));
  assert.equal(Buffer.byteLength(result.responseBody), 1023);

  const binary = await receiver((_req, res) => res.end(Buffer.alloc(4096, 0xff)));
  const bin = await post(sender, binary.url);
  assert.ok(Buffer.byteLength(bin.responseBody) <= 1024);
});

test("a response far beyond 64 KiB is cut off and the sender keeps working", async () => {
  const r = await receiver((_req, res) => res.end("y".repeat(1024 * 1024)));
  const big = await post(sender, r.url);
  assert.equal(big.statusCode, 200);
  assert.equal(big.responseBody.length, 1024);
  const again = await post(sender, r.url);
  assert.equal(again.statusCode, 200);
  assert.equal(r.requests.length, 2);
});

test("503 with Retry-After returns the header raw", async () => {
  const r = await receiver((_req, res) => res.writeHead(503, { "retry-after": "Wed, 21 Oct 2015 07:28:00 GMT" }).end("busy"));
  const result = await post(sender, r.url);
  assert.equal(result.statusCode, 503);
  assert.equal(result.errorClass, null);
  assert.equal(result.retryAfter, "Wed, 21 Oct 2015 07:28:00 GMT");
  assert.equal(result.responseBody, "busy");
});

test("302 is returned as is and never followed", async () => {
  const target = await receiver((_req, res) => res.end("should not be reached"));
  const r = await receiver((_req, res) => res.writeHead(302, { location: `${target.url}/elsewhere` }).end());
  const result = await post(sender, r.url);
  assert.equal(result.statusCode, 302);
  assert.equal(result.errorClass, null);
  assert.equal(r.requests.length, 1);
  assert.equal(target.requests.length, 0);
  assert.equal(target.connections, 0);
});

test("basic auth credentials in the URL become an Authorization header", async () => {
  const r = await receiver((_req, res) => res.end());
  const result = await post(sender, `http://user:p%40ss@127.0.0.1:${r.port}/`);
  assert.equal(result.statusCode, 200);
  assert.equal(r.requests[0]!.headers.authorization, `Basic ${Buffer.from("user:p@ss").toString("base64")}`);
});

// How late the timeout may come. A loaded machine can fire a 300 ms timer a second or more late;
// 3 s still fails a sender whose own timer does not fire (undici's headersTimeout and bodyTimeout
// are off, so it would wait for ever) or fires a unit off (300 s).
const TIMER_SLACK_MS = 3_000;

test("a server that never answers yields timeout within timeoutMs", async () => {
  const r = await receiver(() => {
    /* hang */
  });
  const result = await post(sender, r.url, 300);
  assert.equal(result.errorClass, "timeout");
  assert.equal(result.statusCode, null);
  assert.ok(result.latencyMs >= 290 && result.latencyMs < 300 + TIMER_SLACK_MS, `latency ${result.latencyMs}`);
  assert.equal(r.requests.length, 1);
});

test("a request still waiting for a socket ends as a timeout on its budget, and is never sent", async () => {
  const oneSocket = new Sender({ network: privateOk, userAgent: "Sluice-test/1.0", maxSocketsPerOrigin: 1 });
  senders.push(oneSocket);
  let release = (): void => undefined;
  const r = await receiver((req, res) => {
    if (req.url === "/held") release = () => res.end("held");
    else res.end("ok");
  });
  const held = post(oneSocket, `${r.url}/held`, 60_000);
  await waitFor(() => r.requests.length === 1);
  // The only socket is busy: this one waits in the pool, and its own budget still ends it.
  const queued = await post(oneSocket, `${r.url}/queued`, 300);
  assert.equal(queued.errorClass, "timeout");
  assert.ok(queued.latencyMs < 300 + TIMER_SLACK_MS, `latency ${queued.latencyMs}`);
  release();
  assert.equal((await held).statusCode, 200);
  // The pool is first in, first out: the timed-out request had the socket first, and was dropped unsent.
  assert.equal((await post(oneSocket, `${r.url}/after`)).statusCode, 200);
  assert.deepEqual(
    r.requests.map((x) => x.url),
    ["/held", "/after"],
  );
});

test("a body that never ends keeps the status and notes the timeout", async () => {
  const r = await receiver((_req, res) => {
    res.writeHead(200);
    res.write("partial");
  });
  const result = await post(sender, r.url, 300);
  assert.equal(result.statusCode, 200);
  assert.equal(result.errorClass, null);
  assert.match(result.errorMessage ?? "", /timed out/);
  assert.equal(result.responseBody, "partial");
  assert.ok(result.latencyMs < 300 + TIMER_SLACK_MS, `latency ${result.latencyMs}`);
});

test("a closed port yields connection", async () => {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const result = await post(sender, `http://127.0.0.1:${port}/`);
  assert.equal(result.errorClass, "connection");
  assert.equal(result.statusCode, null);
  assert.match(result.errorMessage ?? "", /ECONNREFUSED/);
});

test("an unresolvable host yields dns", async () => {
  const result = await post(sender, "http://nonexistent.invalid/hook");
  assert.equal(result.errorClass, "dns");
  assert.equal(result.statusCode, null);
});

test("a non-HTTP answer yields invalid_response", async () => {
  const raw = net.createServer((socket) => {
    socket.on("data", () => socket.end("NOT HTTP AT ALL\r\n\r\n"));
  });
  await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
  try {
    const result = await post(sender, `http://127.0.0.1:${(raw.address() as AddressInfo).port}/`);
    assert.equal(result.errorClass, "invalid_response", result.errorMessage ?? "");
  } finally {
    await new Promise<void>((resolve) => raw.close(() => resolve()));
  }
});

test("SSRF guard: every spelling of loopback is blocked before any connection", async () => {
  const r = await receiver((_req, res) => res.end("leaked"));
  const blockedSender = newSender(guarded);
  const p = r.port;
  const corpus = [
    `http://127.0.0.1:${p}/`,
    `http://127.1:${p}/`,
    `http://0x7f000001:${p}/`,
    `http://2130706433:${p}/`,
    `http://0177.0.0.1:${p}/`,
    `http://127.0.0.1.:${p}/`,
    `http://[::ffff:127.0.0.1]:${p}/`,
    `http://[::ffff:7f00:1]:${p}/`,
    `http://[::1]:${p}/`,
    `http://[::]:${p}/`,
    `http://0.0.0.0:${p}/`,
    `http://localhost:${p}/`,
    `http://LOCALHOST:${p}/`,
    `https://localhost:${p}/`,
    `http://169.254.169.254/latest/meta-data/`,
    `http://10.0.0.1:${p}/`,
  ];
  for (const url of corpus) {
    const result = await post(blockedSender, url);
    assert.equal(result.errorClass, "blocked", `${url}: ${result.errorClass} ${result.errorMessage}`);
    assert.equal(result.statusCode, null, url);
    assert.match(result.errorMessage ?? "", /Refused to connect/, url);
  }
  assert.equal(r.requests.length, 0);
  assert.equal(r.connections, 0);
});

test("allowedCidrs 127.0.0.0/8 lets loopback through, by literal and by name", async () => {
  const r = await receiver((_req, res) => res.end("ok"));
  const cidrSender = newSender({ allowPrivateNetworks: false, allowedCidrs: ["127.0.0.0/8"] });
  assert.equal((await post(cidrSender, `http://127.0.0.1:${r.port}/`)).statusCode, 200);
  assert.equal((await post(cidrSender, `http://localhost:${r.port}/`)).statusCode, 200);
  assert.equal((await post(cidrSender, `http://[::1]:${r.port}/`)).errorClass, "blocked");
  assert.equal(r.requests.length, 2);
});

test("a bad URL is reported, not thrown", async () => {
  assert.equal((await post(sender, "not a url")).errorClass, "connection");
  assert.equal((await post(sender, "ftp://example.com/")).errorClass, "connection");
});

test("classifyError looks through causes and aggregate errors", () => {
  const coded = (code: string) => Object.assign(new Error(code), { code });
  assert.equal(classifyError(new TypeError("fetch failed", { cause: new BlockedAddressError("10.0.0.1", "private address") })), "blocked");
  assert.equal(classifyError(coded("ENOTFOUND")), "dns");
  // A resolver that could not answer right now heals by itself: not a DNS failure that pauses at once.
  assert.equal(classifyError(coded("EAI_AGAIN")), "connection");
  assert.equal(classifyError(new AggregateError([coded("ECONNREFUSED"), coded("ECONNREFUSED")])), "connection");
  assert.equal(classifyError(coded("UND_ERR_SOCKET")), "connection");
  assert.equal(classifyError(coded("UND_ERR_CONNECT_TIMEOUT")), "timeout");
  assert.equal(classifyError(Object.assign(new Error("t"), { name: "TimeoutError" })), "timeout");
  assert.equal(classifyError(coded("DEPTH_ZERO_SELF_SIGNED_CERT")), "tls");
  assert.equal(classifyError(coded("ERR_TLS_CERT_ALTNAME_INVALID")), "tls");
  assert.equal(classifyError(coded("CERT_HAS_EXPIRED")), "tls");
  assert.equal(classifyError(coded("HPE_INVALID_CONSTANT")), "invalid_response");
  assert.equal(classifyError(Object.assign(new Error("bad"), { name: "HTTPParserError" })), "invalid_response");
  assert.equal(classifyError(new Error("weird")), "connection");
});
