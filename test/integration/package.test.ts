// The package as a new user gets it: `npm pack`, installed globally into an empty prefix, started
// with `sluice start` on the embedded default, serving the dashboard and delivering. Nothing else
// guards what the tarball holds ("files" in package.json, the build that `prepare` runs, the
// dependencies a checkout has but an install would not).
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { closedPort } from "../helpers/processes.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const NPM_QUIET = ["--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];

describe("the npm package, installed into an empty prefix", () => {
  const dir = mkdtempSync(join(tmpdir(), "sluice-package-"));
  let rx: Receiver;
  let tarball: string;
  let stopSluice: (() => Promise<void>) | null = null;

  before(async () => {
    // Packed from a copy of the checkout: `prepare` rebuilds dist/, which the dashboard tests
    // running beside this one serve from the checkout itself.
    const { stdout: files } = await run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT });
    const copy = join(dir, "checkout");
    for (const file of files.split("\0").filter(Boolean)) {
      mkdirSync(dirname(join(copy, file)), { recursive: true });
      cpSync(join(ROOT, file), join(copy, file), { dereference: false });
    }
    symlinkSync(join(ROOT, "node_modules"), join(copy, "node_modules"));
    const packed = await run("npm", ["pack", "--silent", "--pack-destination", dir], { cwd: copy, maxBuffer: 1 << 24 });
    tarball = join(dir, packed.stdout.trim().split("\n").at(-1)!);
    rx = await startReceiver();
  });
  after(async () => {
    await stopSluice?.();
    await rx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("npm install -g of the tarball gives a `sluice` that starts, serves the dashboard and delivers", async () => {
    const prefix = join(dir, "prefix");
    await run("npm", ["install", "-g", "--prefix", prefix, tarball, ...NPM_QUIET], { cwd: dir, maxBuffer: 1 << 24 });

    const port = await closedPort();
    const key = "sk_package_test";
    // Only what a user's shell would hold: nothing of the checkout's, no tsx.
    const proc = spawn(join(prefix, "bin", "sluice"), ["start"], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: dir,
        SLUICE_PORT: String(port),
        SLUICE_API_KEY: key,
        SLUICE_DATA_DIR: join(dir, "data"),
        SLUICE_ALLOW_PRIVATE_NETWORKS: "1",
        SLUICE_LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    proc.stdout.on("data", (c) => (output += c));
    proc.stderr.on("data", (c) => (output += c));
    const exited = new Promise((r) => proc.once("exit", r));
    stopSluice = async () => {
      if (proc.exitCode === null) proc.kill("SIGTERM");
      await exited;
    };
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/healthz`).catch(() => null))?.ok === true, {
      timeoutMs: 60_000,
      message: () => `the installed sluice did not answer /healthz:\n${output}`,
    });

    const page = await fetch(`${base}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<script[^>]+src="[^"]*app\.js/, "the dashboard page loads its script");

    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const dest = await fetch(`${base}/v1/destinations`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ url: `${rx.url}/hook`, event_types: ["order.*"] }),
    });
    assert.equal(dest.status, 201, await dest.clone().text());
    const published = await fetch(`${base}/v1/events`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ type: "order.created", payload: { id: 42 } }),
    });
    assert.equal(published.status, 202, await published.clone().text());
    await rx.waitForCount(1, 30_000);
    assert.deepEqual((rx.received[0]!.json as { data: unknown }).data, { id: 42 });
    assert.ok(rx.received[0]!.headers["webhook-signature"], "the delivery is signed");
  });
});
