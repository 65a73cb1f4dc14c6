import { pino, type Logger } from "pino";
import { loadConfig } from "../../src/config.js";
import { run, type Running } from "../../src/app.js";
import { before, after } from "node:test";
import { CITUS_URL, createTestStoreDatabase, poolerFor, type StoreShape } from "./db.js";
import { startReceiver, type Receiver } from "./receiver.js";

// Starts a real Sluice (API and/or worker) in this process on a fresh store: embedded PGlite in
// memory, or a new database on the throwaway Postgres server that `npm test` started, reached
// directly or ("pooled") through PgBouncer in transaction mode with a direct URL for LISTEN, as
// docs/configuration.md tells users behind a pooler to run it; or, in `npm run test:citus`, a new
// cell on a Citus cluster.

export type Backend = StoreShape;
/** Both stores: for what the stores do differently (plans, migrations, strings they refuse, the one session). */
export const BACKENDS: Backend[] = ["embedded", "server"];
/**
 * The store an API feature is proved on: store-contract.test.ts proves every store gives the same
 * values, errors, transactions and notifications, so a feature need not prove each store again.
 * In `npm run test:citus`, a cell: every statement of the API must run there too.
 */
export const FEATURE_BACKENDS: Backend[] = CITUS_URL ? ["cell"] : ["server"];
/**
 * The engine and fault tests add the pooled shape: what a transaction pooler breaks (statements,
 * LISTEN, anything held across transactions) shows up in the claim, write-back and recovery paths.
 * In `npm run test:citus` (SLUICE_CITUS_URL set) they run on a Citus cell instead, and only there.
 */
export const ENGINE_BACKENDS: Backend[] = CITUS_URL ? ["cell"] : [...BACKENDS, "pooled"];

// The body is whatever the server sent (parsed JSON, else the text): callers name its type,
// `s.api<Destination>(...)`, from test/helpers/api-types.ts; unnamed, it is `unknown`.
export interface ApiAnswer<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

export interface ApiOptions {
  key?: string | null;
  headers?: Record<string, string>;
}

export interface TestSluice {
  url: string;
  apiKey: string;
  databaseUrl: string | undefined;
  running: Running;
  /** Calls the API with the default key (or `key`); `body` is JSON-encoded unless a string. */
  api<T = unknown>(method: string, path: string, body?: unknown, opts?: ApiOptions): Promise<ApiAnswer<T>>;
  stop(): Promise<void>;
}

export async function startSluice(
  backend: Backend,
  opts: {
    env?: Record<string, string>;
    worker?: boolean;
    api?: boolean;
    databaseUrl?: string;
    /** Instead of a pino at SLUICE_LOG_LEVEL (e.g. one that captures lines). */ log?: Logger;
  } = {},
): Promise<TestSluice> {
  const releases: (() => Promise<void>)[] = [];
  let databaseUrl = opts.databaseUrl;
  if (backend !== "embedded" && !databaseUrl) {
    const tdb = await createTestStoreDatabase(backend);
    databaseUrl = tdb.url;
    releases.push(() => tdb.drop());
  }
  let pooled: Record<string, string> = {};
  if (backend === "pooled" && databaseUrl) {
    const bouncer = await poolerFor(databaseUrl);
    releases.push(() => bouncer.stop());
    pooled = { DATABASE_URL: bouncer.url, SLUICE_DIRECT_DATABASE_URL: databaseUrl };
  }
  const apiKey = "sk_test_" + Math.random().toString(36).slice(2);
  const env: Record<string, string> = {
    SLUICE_PORT: "0",
    SLUICE_API_KEY: apiKey,
    SLUICE_DATA_DIR: "memory://",
    SLUICE_ALLOW_PRIVATE_NETWORKS: "1",
    SLUICE_LOG_LEVEL: process.env.SLUICE_TEST_LOG_LEVEL ?? "silent",
    SLUICE_SHUTDOWN_GRACE_SECONDS: "2",
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...pooled,
    ...opts.env,
  };
  const config = loadConfig({}, env);
  const running = await run(config, {
    api: opts.api ?? true,
    worker: opts.worker ?? true,
    log: opts.log ?? pino({ level: config.logLevel }),
  });
  const url = running.url ?? "";
  return {
    url,
    apiKey: env.SLUICE_API_KEY!,
    databaseUrl,
    running,
    async api<T>(method: string, path: string, body?: unknown, o: ApiOptions = {}): Promise<ApiAnswer<T>> {
      const headers: Record<string, string> = { ...o.headers };
      const key = o.key === undefined ? env.SLUICE_API_KEY : o.key;
      if (key !== null) headers.authorization = `Bearer ${key}`;
      let payload: string | undefined;
      if (body !== undefined) {
        headers["content-type"] ??= "application/json";
        payload = typeof body === "string" ? body : JSON.stringify(body);
      }
      const res = await fetch(url + path, { method, headers, body: payload });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        /* not JSON: keep the text */
      }
      return { status: res.status, body: parsed as T, headers: res.headers };
    },
    async stop() {
      await running.stop();
      for (const release of releases.reverse()) await release();
    },
  };
}

/**
 * Inside a describe(): starts Sluice on `backend` and a receiver before its tests, stops both
 * after. Tests read them as `const { s, rx } = ctx;`.
 */
export function useSluiceAndReceiver(backend: Backend): { s: TestSluice; rx: Receiver } {
  const ctx = {} as { s: TestSluice; rx: Receiver };
  before(async () => {
    ctx.s = await startSluice(backend);
    ctx.rx = await startReceiver();
  });
  after(async () => {
    await ctx.rx?.close();
    await ctx.s?.stop();
  });
  return ctx;
}
