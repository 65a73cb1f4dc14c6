import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { closedPort, spawnSluiceCli, type SluiceProcess } from "../helpers/processes.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { waitFor } from "../helpers/wait-for.js";
import type { Destination, Page, Tenant } from "../helpers/api-types.js";
import { SETTINGS } from "../../src/config.js";

// The real CLI failing to start: each failure is a line or two that names what is wrong and the
// setting that mends it, a non-zero exit code and no stack trace. And the embedded store's lock:
// one process at a time, a stale lock taken over, a failed start that does not spend the key.

const STACK_LINE = /^\s+at /m;

async function finished(p: SluiceProcess): Promise<{ code: number | string; out: string }> {
  const code = await p.exited;
  return { code, out: p.output() };
}

describe("start-up failures before the store opens", () => {
  test("an unknown flag names the closest real one and exits 2", async () => {
    const { code, out } = await finished(spawnSluiceCli(["start", "--prot", "1"]));
    assert.equal(code, 2, out);
    assert.match(out, /unknown option --prot; did you mean --port\?/);
    assert.doesNotMatch(out, STACK_LINE);
  });

  test("--help lists every setting's flag; each command's --help lists only its own options", async () => {
    const all = await finished(spawnSluiceCli(["--help"]));
    assert.equal(all.code, 0, all.out);
    for (const s of SETTINGS) {
      assert.ok(all.out.includes(s.env), `${s.env} in sluice --help`);
      if (s.flag) assert.ok(all.out.includes(`--${s.flag} `), `--${s.flag} in sluice --help`);
    }
    const worker = await finished(spawnSluiceCli(["worker", "--help"]));
    assert.equal(worker.code, 0, worker.out);
    assert.match(worker.out, /^sluice worker \[options\]/);
    assert.match(worker.out, /--shard I\/N/);
    assert.match(worker.out, /--metrics-port N/);
    assert.doesNotMatch(worker.out, /--port N|--destination/);
    const audit = await finished(spawnSluiceCli(["audit", "--help"]));
    assert.match(audit.out, /--destination ID/);
    assert.doesNotMatch(audit.out, /--shard/);
  });

  test("an option of another command is refused with that command's help pointer, exit 2", async () => {
    const { code, out } = await finished(spawnSluiceCli(["worker", "--port", "3000"]));
    assert.equal(code, 2, out);
    assert.match(out, /sluice worker does not take --port \(sluice worker --help lists its options\)/);
  });

  test("an unknown command names the closest real one and exits 2", async () => {
    const { code, out } = await finished(spawnSluiceCli(["strat"]));
    assert.equal(code, 2, out);
    assert.match(out, /unknown command 'strat'; did you mean 'start'\?/);
  });

  test("a malformed DATABASE_URL exits 2 without showing it, and a misspelt variable is pointed out", async () => {
    const { code, out } = await finished(
      spawnSluiceCli(["start"], { DATABASE_URL: "postgres://app:hunter2@db:port/app", SLUICE_PORTT: "1" }),
    );
    assert.equal(code, 2, out);
    assert.match(out, /DATABASE_URL: is not a URL/);
    assert.ok(!out.includes("hunter2"), out);
    assert.match(out, /SLUICE_PORTT is not a Sluice setting.*did you mean SLUICE_PORT\?/);
    assert.doesNotMatch(out, STACK_LINE);
  });

  test("an unreachable DATABASE_URL is retried for SLUICE_DB_CONNECT_WAIT_SECONDS, then named", async () => {
    const port = await closedPort();
    const { code, out } = await finished(
      spawnSluiceCli(["start"], {
        DATABASE_URL: `postgres://u:hunter2@127.0.0.1:${port}/x`,
        SLUICE_DB_CONNECT_WAIT_SECONDS: "1",
      }),
    );
    assert.equal(code, 1, out);
    assert.match(out, new RegExp(`Cannot reach Postgres at 127\\.0\\.0\\.1:${port}.*connection refused`));
    assert.match(out, /DATABASE_URL/);
    assert.match(out, /waiting for Postgres at 127\.0\.0\.1/, "the wait is logged");
    assert.ok(!out.includes("hunter2"), out);
    assert.doesNotMatch(out, STACK_LINE);
  });

  describe("against the test server", () => {
    let tdb: TestDatabase;
    before(async () => {
      tdb = await createTestDatabase();
    });
    after(async () => {
      await tdb?.drop();
    });

    // A long wait: were these retried like an unreachable server, the test would time out.
    const env = (url: URL) => ({ DATABASE_URL: url.toString(), SLUICE_DB_CONNECT_WAIT_SECONDS: "600" });

    test("a login the server refuses fails at once, saying so", async () => {
      const url = new URL(tdb.url);
      url.username = "no_such_role";
      url.password = "hunter2";
      const { code, out } = await finished(spawnSluiceCli(["migrate"], env(url)));
      assert.equal(code, 1, out);
      assert.match(out, /refused the login in DATABASE_URL: role "no_such_role" does not exist/);
      assert.match(out, /Check the user name and password/);
      assert.doesNotMatch(out, /waiting for/);
      assert.ok(!out.includes("hunter2"), out);
      assert.doesNotMatch(out, STACK_LINE);
    });

    test("a missing database fails at once, naming it", async () => {
      const url = new URL(tdb.url);
      url.pathname = "/sluice_no_such_database";
      const { code, out } = await finished(spawnSluiceCli(["migrate"], env(url)));
      assert.equal(code, 1, out);
      assert.match(out, /has no such database: database "sluice_no_such_database" does not exist/);
      assert.doesNotMatch(out, /waiting for/);
      assert.doesNotMatch(out, STACK_LINE);
    });

    test("migrate on a reachable server applies the migrations", async () => {
      const { code, out } = await finished(spawnSluiceCli(["migrate"], env(new URL(tdb.url))));
      assert.equal(code, 0, out);
      assert.match(out, /applied: 0001_init\.sql.*0003_default_tenant\.sql/);
    });
  });
});

describe("the embedded store: one process at a time, a key never spent by a failed start", () => {
  let root: string;
  let dataDir: string;
  const running: SluiceProcess[] = [];
  before(() => {
    root = mkdtempSync(path.join(os.tmpdir(), "sluice-startup-"));
    dataDir = path.join(root, "store");
  });
  after(() => {
    for (const p of running) p.kill("SIGKILL");
    rmSync(root, { recursive: true, force: true });
  });

  const env = (extra: Record<string, string> = {}) => ({ SLUICE_DATA_DIR: dataDir, SLUICE_LOG_LEVEL: "info", ...extra });

  /** Starts `sluice start` on a free port and waits for it to be ready; returns its URL. */
  async function startReady(extra: Record<string, string> = {}): Promise<{ p: SluiceProcess; url: string }> {
    const p = spawnSluiceCli(["start", "--port", "0"], env(extra));
    running.push(p);
    let url = "";
    await waitFor(
      () => {
        const m = /"url":"(http:\/\/[^"]+)".*"msg":"sluice start ready"/.exec(p.output());
        if (m) url = m[1]!;
        if (p.proc.exitCode !== null) throw new Error(`sluice start exited: ${p.output()}`);
        return url !== "";
      },
      { timeoutMs: 60_000, intervalMs: 50, message: () => `not ready: ${p.output()}` },
    );
    return { p, url };
  }

  async function stop(p: SluiceProcess): Promise<void> {
    p.kill("SIGTERM");
    assert.equal(await p.exited, 0, `SIGTERM exits 0: ${p.output()}`);
  }

  /** `T`: the answer's body type, from test/helpers/api-types.ts. */
  const call = async <T = unknown>(url: string, key: string, method: string, p: string, body?: unknown) => {
    const res = await fetch(url + p, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T };
  };

  let firstKey = "";
  let destinationId = "";

  test("a busy port fails in two lines naming it and SLUICE_PORT, and lets go of the store", async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const { code, out } = await finished(spawnSluiceCli(["start", "--port", String(port)], env()));
      assert.equal(code, 1, out);
      assert.match(out, new RegExp(`127\\.0\\.0\\.1:${port}: port ${port} is already in use`));
      assert.match(out, /--port \/ SLUICE_PORT/);
      assert.doesNotMatch(out, STACK_LINE);
      assert.doesNotMatch(out, /shown once/, "no key is made before the port is open");
      assert.ok(existsSync(path.join(dataDir, "PG_VERSION")), "the store was created");
      assert.ok(!existsSync(path.join(dataDir, "sluice.lock")), "the lock is released");
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  test("the next start shows the generated key (the failed one did not spend it) and holds the store", async () => {
    const { p, url } = await startReady({ SLUICE_PORTT: "1" });
    const out = p.output();
    const key = /shown once — store it now:\s+(sk_\S+)/.exec(out)?.[1];
    assert.ok(key, `the key banner: ${out}`);
    firstKey = key;
    assert.match(out, /SLUICE_PORTT is not a Sluice setting and is ignored; did you mean SLUICE_PORT\?/);
    const created = await call<Destination>(url, firstKey, "POST", "/v1/destinations", {
      url: "https://example.com/hook",
      event_types: ["x.y"],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    destinationId = created.body.id;

    // While it runs: a second start, a migrate and an audit are each refused, naming the folder and the pid.
    const pid = p.proc.pid!;
    const [second, migrate, audit] = await Promise.all([
      finished(spawnSluiceCli(["start", "--port", "0"], env())),
      finished(spawnSluiceCli(["migrate"], env())),
      finished(spawnSluiceCli(["audit", "rate", "--destination", destinationId], env())),
    ]);
    for (const [name, r] of [
      ["start", second],
      ["migrate", migrate],
      ["audit", audit],
    ] as const) {
      assert.notEqual(r.code, 0, `${name}: ${r.out}`);
      assert.ok(r.out.includes(`The embedded store in ${path.resolve(dataDir)} is in use by process ${pid}`), `${name}: ${r.out}`);
      assert.match(r.out, /'sluice start', started \d{4}-/, `${name}: ${r.out}`);
      assert.doesNotMatch(r.out, STACK_LINE, name);
    }
    assert.match(second.out, /stop that process first, or use another --data-dir/);
    assert.match(migrate.out, /applies migrations itself.*stop it first/);
    assert.match(audit.out, /through the running API.*or stop that process/);
    assert.equal(p.proc.exitCode, null, "the running one is undisturbed");
    assert.equal((await call(url, firstKey, "GET", "/v1/destinations")).status, 200);

    await stop(p);
    assert.ok(!existsSync(path.join(dataDir, "sluice.lock")), "the lock is released on stop");
  });

  test("a stale lock is taken over, and a new SLUICE_API_KEY joins the default tenant", async () => {
    assert.ok(firstKey, "needs the previous test");
    // The pid of a process that has exited: the lock of a Sluice that was killed.
    const dead = spawn(process.execPath, ["-e", ""]);
    const deadPid = dead.pid!;
    await new Promise((r) => dead.on("exit", r));
    writeFileSync(
      path.join(dataDir, "sluice.lock"),
      JSON.stringify({
        pid: deadPid,
        host: os.hostname(),
        command: "sluice start",
        started_at: new Date().toISOString(),
      }),
    );

    const secondKey = "sk_startup_test_second_key";
    const { p, url } = await startReady({ SLUICE_API_KEY: secondKey });
    assert.match(p.output(), new RegExp(`taking over a stale lock of the embedded store: process ${deadPid} is no longer running`));
    assert.match(p.output(), /SLUICE_API_KEY was new: added it as another key of the default tenant/);
    assert.doesNotMatch(p.output(), /shown once/);

    const [t1, t2] = [await call<Tenant>(url, firstKey, "GET", "/v1/tenant"), await call<Tenant>(url, secondKey, "GET", "/v1/tenant")];
    assert.equal(t1.status, 200, JSON.stringify(t1.body));
    assert.equal(t2.status, 200, JSON.stringify(t2.body));
    assert.equal(t2.body.id, t1.body.id, "one default tenant with both keys");
    const listed = (await call<Page<Destination>>(url, secondKey, "GET", "/v1/destinations")).body.data.map((d) => d.id);
    assert.deepEqual(listed, [destinationId]);
    await stop(p);
  });
});
