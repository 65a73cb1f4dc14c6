import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ApiKeyCreated } from "../../sdk/src/index.js";
import type { Attempt, Delivery, Destination, Event, EventAccepted, Page } from "../helpers/api-types.js";
import { closedPort } from "../helpers/processes.js";
import { startSluice, type TestSluice } from "../helpers/sluice.js";
import { waitFor } from "../helpers/wait-for.js";

// The API commands (`sluice destinations|events|deliveries|keys …`) and `sluice listen`, run as
// the real CLI in a child process against a real Sluice: exit codes, tables for people, --json for
// scripts, the API's errors and the command line's mistakes on stderr — and `sluice listen`
// receiving real deliveries and checking their signatures.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const STACK_LINE = /^\s+at /m;

interface Run {
  code: number | string;
  stdout: string;
  stderr: string;
}

/** A clean environment (no SLUICE_* of the caller's) pointed at `s`. */
function envFor(s: TestSluice | null, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    ...(s ? { SLUICE_URL: s.url, SLUICE_API_KEY: s.apiKey } : {}),
    ...extra,
  };
}

function spawnCli(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], { cwd: ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
}

/** Runs one command to its end; `input` is written to its stdin, which is then closed. */
function cli(s: TestSluice | null, args: string[], opts: { env?: Record<string, string>; input?: string } = {}): Promise<Run> {
  const proc = spawnCli(args, envFor(s, opts.env));
  let stdout = "";
  let stderr = "";
  proc.stdout!.on("data", (c) => (stdout += c));
  proc.stderr!.on("data", (c) => (stderr += c));
  proc.stdin!.end(opts.input ?? "");
  return new Promise((resolve) => proc.on("close", (code, sig) => resolve({ code: code ?? sig ?? -1, stdout, stderr })));
}

/** Exit 0, or fails showing what the command said. */
async function ok(s: TestSluice | null, args: string[], opts: { env?: Record<string, string>; input?: string } = {}): Promise<Run> {
  const r = await cli(s, args, opts);
  assert.equal(r.code, 0, `sluice ${args.join(" ")} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r;
}

function json<T>(r: Run): T {
  return JSON.parse(r.stdout) as T;
}

/** The header line and the row of `id` from a table, split into cells. */
function tableRow(stdout: string, id: string): { head: string[]; row: string[] } {
  const lines = stdout.trimEnd().split("\n");
  const row = lines.find((l) => l.startsWith(id));
  assert.ok(row, `no row for ${id} in:\n${stdout}`);
  return { head: lines[0]!.split(/ {2,}/), row: row.split(/ {2,}/) };
}

/** `field  value` lines as a map. */
function recordOf(stdout: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const m = /^(\w+) {2,}(.*)$/.exec(line);
    if (m) map.set(m[1]!, m[2]!);
  }
  return map;
}

interface Listener {
  url: string;
  output(): string;
  stop(): Promise<number | string>;
}

/** `sluice listen` on a free port, until stop(); resolves once it says where it listens. */
async function listen(args: string[], env: Record<string, string> = {}): Promise<Listener> {
  const proc = spawnCli(["listen", "--port", "0", ...args], envFor(null, env));
  let stdout = "";
  let stderr = "";
  proc.stdout!.on("data", (c) => (stdout += c));
  proc.stderr!.on("data", (c) => (stderr += c));
  const exited = new Promise<number | string>((resolve) => proc.on("close", (code, sig) => resolve(code ?? sig ?? -1)));
  await waitFor(() => /receiving webhooks on (http:\S+),/.test(stderr) || proc.exitCode !== null, {
    timeoutMs: 60_000,
    message: () => `sluice listen did not start:\n${stderr}`,
  });
  const url = /receiving webhooks on (http:\S+),/.exec(stderr)?.[1];
  assert.ok(url, `sluice listen did not start:\n${stdout}\n${stderr}`);
  return {
    url,
    output: () => stdout,
    stop: () => {
      proc.kill("SIGTERM");
      return exited;
    },
  };
}

describe("the command line's mistakes: exit 2, a suggestion, no request", () => {
  test("per-command help for a group and a subcommand", async () => {
    const [group, sub] = await Promise.all([ok(null, ["destinations", "--help"]), ok(null, ["destinations", "create", "--help"])]);
    assert.match(group.stdout, /^sluice destinations <list\|get\|create\|update\|pause\|resume\|recover>/);
    assert.match(group.stdout, /recover ID --since/);
    assert.match(sub.stdout, /^sluice destinations create --url URL \[options\]/);
    assert.match(sub.stdout, /--rate-per-second N/);
    assert.match(sub.stdout, /--api-url URL/);
    assert.doesNotMatch(sub.stdout, /--shard|--data-dir/);
  });

  test("typos in commands, subcommands and options name the closest real one", async () => {
    const cases: [string[], RegExp][] = [
      [["destination", "list"], /unknown command 'destination'; did you mean 'destinations'\?/],
      [["destinations", "lsit"], /unknown subcommand 'lsit' of sluice destinations; did you mean 'list'\?/],
      [["destinations", "list", "--limt", "5"], /unknown option --limt; did you mean --limit\? \(sluice destinations list --help/],
      [["deliveries", "list", "--statuses", "dead"], /sluice deliveries list does not take --statuses; did you mean --status\?/],
      [["destinations", "list"], /no API key: set SLUICE_API_KEY/],
    ];
    const runs = await Promise.all(cases.map(([args]) => cli(null, args)));
    runs.forEach((r, i) => {
      assert.equal(r.code, 2, `${cases[i]![0].join(" ")}:\n${r.stderr}`);
      assert.match(r.stderr, cases[i]![1]);
      assert.doesNotMatch(r.stderr, STACK_LINE);
      assert.equal(r.stdout, "");
    });
  });

  test("a refused connection names the URL it tried and how to set SLUICE_URL, exit 1", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const r = await cli(null, ["destinations", "list"], { env: { SLUICE_URL: url, SLUICE_API_KEY: "sk_x" } });
    assert.equal(r.code, 1, r.stderr);
    assert.ok(r.stderr.includes(`could not reach Sluice at ${url} (SLUICE_URL): connection refused`), r.stderr);
    assert.match(r.stderr, /set SLUICE_URL \(or --api-url\)/);
    assert.doesNotMatch(r.stderr, STACK_LINE);
  });
});

// On the server store only: the commands speak to the API, and store-contract.test.ts proves
// the stores alike underneath it.
describe("the API commands against a real Sluice", () => {
  let s: TestSluice;
  before(async () => {
    s = await startSluice("server");
  });
  after(async () => {
    await s?.stop();
  });

  test("destinations: create, list, get, update, pause, resume, recover", async () => {
    const created = await ok(s, [
      "destinations",
      "create",
      "--url",
      "https://example.com/hooks",
      "--name",
      "shop",
      "--event-types",
      "order.*,invoice.paid",
      "--rate-per-second",
      "5",
      "--header",
      "X-Team: billing",
    ]);
    const rec = recordOf(created.stdout);
    const id = rec.get("id")!;
    assert.match(id, /^dst_/);
    assert.equal(rec.get("url"), "https://example.com/hooks");
    assert.equal(rec.get("event_types"), "order.*, invoice.paid");
    assert.equal(rec.get("rate_limit"), "max_per_second=5");
    assert.match(rec.get("secret") ?? "", /^whsec_/);
    assert.match(created.stderr, /sluice listen --secret whsec_/);

    const [list, get] = await Promise.all([ok(s, ["destinations", "list"]), ok(s, ["destinations", "get", id, "--json"])]);
    const { head, row } = tableRow(list.stdout, id);
    assert.deepEqual(head, ["ID", "NAME", "STATUS", "HEALTH", "QUEUED", "IN FLIGHT", "URL"]);
    assert.deepEqual(row, [id, "shop", "active", "healthy", "0", "0", "https://example.com/hooks"]);
    assert.deepEqual(json<Destination>(get).headers, { "X-Team": "billing" });

    // Rate and header options merge into what the destination has; --set reaches any field.
    const update = [
      "destinations",
      "update",
      id,
      "--rate-per-minute",
      "100",
      "--header",
      "X-Env: test",
      "--set",
      "ordered=true",
      "--set",
      "name=shop-2",
    ];
    const updated = recordOf((await ok(s, update)).stdout);
    assert.equal(updated.get("rate_limit"), "max_per_second=5 max_per_minute=100");
    assert.deepEqual(updated.get("headers")?.split(" ").sort(), ["X-Env=test", "X-Team=billing"]);
    assert.equal(updated.get("ordered"), "true");
    assert.equal(updated.get("name"), "shop-2");

    // Adaptive pace: switched with --adaptive, its bounds merged into what it has; a bound alone
    // does not switch it on, and no request is made for one (exit 2).
    const refused = await cli(s, ["destinations", "update", id, "--pace-max", "200"]);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /adaptive pace is off for this destination: add --adaptive on/);
    await ok(s, ["destinations", "update", id, "--adaptive", "on", "--pace-max", "200", "--target-latency-ms", "800"]);
    const paced = json<Destination>(await ok(s, ["destinations", "update", id, "--pace-min", "2", "--json"]));
    assert.deepEqual(paced.adaptive, { enabled: true, min_per_second: 2, max_per_second: 200, target_latency_ms: 800 });
    const both = await cli(s, ["destinations", "update", id, "--adaptive", "off", "--pace-min", "3"]);
    assert.equal(both.code, 2, both.stderr);
    assert.equal(json<Destination>(await ok(s, ["destinations", "update", id, "--adaptive", "off", "--json"])).adaptive, null);

    const paused = await ok(s, ["destinations", "pause", id, "--reason", "maintenance"]);
    assert.match(paused.stdout, new RegExp(`^${id}  paused \\(.*maintenance\\)`));
    assert.equal((await s.api<Destination>("GET", `/v1/destinations/${id}`)).body.status, "paused");
    const [resumed, recovered] = await Promise.all([
      ok(s, ["destinations", "resume", id, "--discard", "--json"]),
      ok(s, ["destinations", "recover", id, "--since", "1h", "--statuses", "dead,discarded"]),
    ]);
    assert.equal(json<Destination>(resumed).status, "active");
    assert.match(recovered.stdout, /^rcv_\S+ {2}0 deliveries to queue again$/m);
  });

  test("events: publish (--data, --data-file, stdin, idempotency key), list, get", async () => {
    // Nothing listens on port 9: the deliveries fail and wait, without leaving this machine.
    const dst = await s.api<Destination>("POST", "/v1/destinations", { url: "http://127.0.0.1:9/in", event_types: ["cli.*"] });
    const dir = mkdtempSync(path.join(os.tmpdir(), "sluice-cli-"));
    try {
      const file = path.join(dir, "payload.json");
      writeFileSync(file, '{"id": 42}');
      const [fromData, fromStdin] = await Promise.all([
        ok(s, ["events", "publish", "--type", "cli.data", "--data", '{"id": 42}', "--idempotency-key", "cli-k1"]),
        ok(s, ["events", "publish", "--type", "cli.stdin"], { input: '{"from": "stdin"}' }),
      ]);
      const eventId = /^(evt_\S+) {2}1 delivery$/.exec(fromData.stdout.trim())?.[1];
      assert.ok(eventId, fromData.stdout);
      // The same key and body again: the first answer, not a second event.
      const fromFile = await ok(s, [
        "events",
        "publish",
        "--type",
        "cli.data",
        "--data-file",
        file,
        "--idempotency-key",
        "cli-k1",
        "--json",
      ]);
      assert.equal(json<EventAccepted>(fromFile).id, eventId);
      const stdinId = /^(evt_\S+)/.exec(fromStdin.stdout)?.[1];
      assert.deepEqual((await s.api<Event>("GET", `/v1/events/${stdinId}`)).body.payload, { from: "stdin" });

      const [list, get] = await Promise.all([
        ok(s, ["events", "list", "--type", "cli.*", "--since", "1h"]),
        ok(s, ["events", "get", eventId]),
      ]);
      const { head, row } = tableRow(list.stdout, eventId);
      assert.deepEqual(head, ["ID", "TYPE", "OCCURRED AT", "PAYLOAD"]);
      assert.deepEqual([row[1], row[3]], ["cli.data", '{"id":42}']);
      assert.equal(list.stdout.trim().split("\n").length, 1 + 2, list.stdout); // the header, two events
      assert.equal(recordOf(get.stdout).get("payload"), '{"id":42}');
      const deliveryRow = get.stdout.split("\n").find((l) => l.startsWith("dlv_"));
      assert.ok(deliveryRow?.includes(dst.body.id), get.stdout);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a 404 and a 422 print the code (and each invalid field) on stderr, exit 1", async () => {
    const [notFound, invalid] = await Promise.all([
      cli(s, ["destinations", "get", "dst_nope"]),
      cli(s, ["destinations", "create", "--url", "ftp://example.com", "--set", "timeout_seconds=999"]),
    ]);
    assert.equal(notFound.code, 1, notFound.stderr);
    assert.match(notFound.stderr, /^sluice: SLUICE_DESTINATION_NOT_FOUND \(HTTP 404\): .*dst_nope/);
    assert.equal(invalid.code, 1, invalid.stderr);
    assert.match(invalid.stderr, /^sluice: SLUICE_VALIDATION_FAILED \(HTTP 422\)/);
    assert.match(invalid.stderr, /^ {2}url: /m);
    assert.match(invalid.stderr, /^ {2}timeout_seconds: must be a whole number between 1 and 60$/m);
    for (const r of [notFound, invalid]) {
      assert.equal(r.stdout, "");
      assert.doesNotMatch(r.stderr, STACK_LINE);
    }
  });

  test("lists page with --limit, and --all follows next_cursor", async () => {
    await Promise.all(
      [1, 2, 3].map((i) =>
        s.api("POST", "/v1/destinations", { url: `https://example.net/${i}`, name: `page-${i}`, event_types: ["none.*"] }),
      ),
    );
    const total = (await s.api<Page<Destination>>("GET", "/v1/destinations?limit=1000")).body.data.length;
    const [first, all] = await Promise.all([
      ok(s, ["destinations", "list", "--limit", "2"]),
      ok(s, ["destinations", "list", "--limit", "2", "--all", "--json"]),
    ]);
    assert.equal(first.stdout.trim().split("\n").length, 1 + 2, first.stdout);
    assert.match(first.stderr, /more destinations: --all for every page, or --cursor \S+/);
    const everything = json<Page<Destination>>(all);
    assert.equal(everything.data.length, total);
    assert.equal(new Set(everything.data.map((d) => d.id)).size, total);
    assert.equal(everything.next_cursor, null);
  });

  test("keys: create (the key works), list, revoke (it stops working)", async () => {
    const key = json<ApiKeyCreated>(await ok(s, ["keys", "create", "--name", "cli test", "--json"]));
    assert.match(key.key, /^sk_/);
    // Listed when asked with the new key itself.
    const list = await ok(s, ["keys", "list"], { env: { SLUICE_API_KEY: key.key } });
    const { head, row } = tableRow(list.stdout, key.id);
    assert.deepEqual(head, ["ID", "NAME", "PREFIX", "CREATED AT"]);
    assert.equal(row[1], "cli test");
    assert.ok(key.key.startsWith(row[2]!), `${row[2]} is a prefix of the key`);

    const revoked = await ok(s, ["keys", "revoke", key.id]);
    assert.match(revoked.stdout, new RegExp(`^revoked ${key.id}`));
    const refused = await cli(s, ["destinations", "list", "--api-key", key.key]);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /SLUICE_AUTH_INVALID_KEY \(HTTP 401\)/);
    assert.match(refused.stderr, /SLUICE_API_KEY \(or --api-key\)/);
  });

  test("sluice listen verifies real deliveries; deliveries list, get and retry", async () => {
    const secret = `whsec_${randomBytes(24).toString("base64")}`;
    const wrong = `whsec_${randomBytes(24).toString("base64")}`;
    const [right, failing] = await Promise.all([
      listen(["--secret", secret]),
      // Answers 500 and checks with a secret that is not the destination's; with no retries, the delivery goes dead.
      listen(["--status", "500"], { SLUICE_LISTEN_SECRET: wrong }),
    ]);
    try {
      const create = async (body: object) => (await s.api<Destination>("POST", "/v1/destinations", body)).body;
      const [a, b] = await Promise.all([
        create({ url: right.url, secret, event_types: ["listen.ok"] }),
        create({ url: failing.url, secret, event_types: ["listen.fail"], retry_schedule_seconds: [] }),
      ]);
      const [okEvent, failEvent] = await Promise.all(
        ["listen.ok", "listen.fail"].map(
          async (type) => (await s.api<EventAccepted>("POST", "/v1/events", { type, payload: { order: 42 } })).body.id,
        ),
      );
      await waitFor(() => right.output().includes(okEvent!) && failing.output().includes(failEvent!), {
        timeoutMs: 60_000,
        message: () => `listen output:\n${right.output()}\n${failing.output()}`,
      });
      // One line per delivery when stdout is no terminal: time, type, webhook-id, verdict, body.
      const line = right
        .output()
        .split("\n")
        .find((l) => l.includes(okEvent!));
      assert.match(
        line!,
        new RegExp(
          `^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} {2}listen\\.ok {2}${okEvent} {2}verified {2}\\{"type":"listen\\.ok",.*"data":\\{"order":42\\}\\}$`,
        ),
      );
      const badLine = failing
        .output()
        .split("\n")
        .find((l) => l.includes(failEvent!));
      assert.match(badLine!, new RegExp(`^\\S+ {2}listen\\.fail {2}${failEvent} {2}NOT verified \\(No matching signature found\\) {2}\\{`));

      // The 500 that listen answered made the delivery dead: retry queues it again.
      let dead: Delivery | undefined;
      await waitFor(
        async () => {
          dead = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${b.id}`)).body.data[0];
          return dead?.status === "dead";
        },
        { timeoutMs: 30_000, message: () => `delivery: ${JSON.stringify(dead)}` },
      );
      const delivered = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${a.id}`)).body.data[0]!;
      // Read before retrying: a retried delivery may be attempted (and die) again at once.
      const [list, get] = await Promise.all([
        ok(s, ["deliveries", "list", "--destination", b.id, "--status", "dead"]),
        ok(s, ["deliveries", "get", dead!.id]),
      ]);
      const [retried, notRetryable] = await Promise.all([
        ok(s, ["deliveries", "retry", dead!.id, "--json"]),
        cli(s, ["deliveries", "retry", delivered.id]),
      ]);
      const { head, row } = tableRow(list.stdout, dead!.id);
      assert.deepEqual(head, ["ID", "STATUS", "ATTEMPTS", "EVENT", "DESTINATION", "NEXT ATTEMPT", "LAST ERROR"]);
      assert.deepEqual(row.slice(0, 5), [dead!.id, "dead", "1", failEvent, b.id]);
      assert.match(get.stdout, /^# {2}STARTED AT .* OUTCOME +STATUS +MS +ERROR$/m);
      assert.match(get.stdout, /^1 {2}\S+ +failure +500 /m);
      assert.equal(json<Delivery>(retried).id, dead!.id);
      await waitFor(async () => (await s.api<Page<Attempt>>("GET", `/v1/deliveries/${dead!.id}/attempts`)).body.data.length === 2, {
        timeoutMs: 30_000,
      });
      assert.equal(notRetryable.code, 1);
      assert.match(notRetryable.stderr, /SLUICE_DELIVERY_NOT_RETRYABLE \(HTTP 409\)/);
    } finally {
      assert.equal(await right.stop(), 0);
      assert.equal(await failing.stop(), 0);
    }
  });
});
