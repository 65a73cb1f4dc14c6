import { mkdirSync } from "node:fs";
import pg from "pg";
import { ServerDb, CONNECT_TIMEOUT_MS } from "./server-db.js";
import { EmbeddedDb } from "./embedded-db.js";
import type { Db, TxOptions, TxQueryable } from "./store.js";
import { describeServer, isRetryableDbError, isStoreUnavailable } from "./store-errors.js";
import { ConfigError, StoreUnavailableError } from "../errors.js";
import { connectionTarget, type ConnectionTarget } from "./hosts.js";

// Opening a store, and running transactions again when Postgres aborts them. The store interface
// is store.ts, its two drivers server-db.ts and embedded-db.ts; what their errors mean is
// store-errors.ts. Everything is re-exported here, where the rest of Sluice imports it from.

export * from "./store.js";
export { isRetryableDbError, isStoreUnavailable, describeServer } from "./store-errors.js";
export { EmbeddedDb } from "./embedded-db.js";

export interface OpenOptions {
  /** Postgres server URL; when absent the embedded store in `dataDir` is used. */
  databaseUrl?: string | undefined;
  /**
   * A direct connection to the same database when `databaseUrl` goes through a transaction
   * pooler: the listener's session, which a pooler cannot keep. Its presence also turns statement
   * names off, since a pooled transaction may land on a connection that never prepared them.
   */
  directUrl?: string | undefined;
  /** Folder of the embedded store; `memory://` keeps it in memory (tests). */
  dataDir?: string;
  poolSize?: number;
  /** The cell the URLs reach (cells.ts), when `databaseUrl` does not say so in its options. */
  cell?: string | undefined;
}

export async function openDb(opts: OpenOptions): Promise<Db> {
  if (opts.databaseUrl) {
    // A URL naming several hosts (hosts.ts) brings a Client class that picks one per connection;
    // the listener shares it when it uses the same URL, so both follow a failover together.
    const target = targetOf("DATABASE_URL", opts.databaseUrl);
    const listen = opts.directUrl ? targetOf("SLUICE_DIRECT_DATABASE_URL", opts.directUrl) : target;
    const pool = new pg.Pool({
      ...target,
      max: opts.poolSize ?? 10,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      // Statements issued without waiting go out together (TxQueryable); one at a time, as
      // everywhere else, nothing changes.
      pipeline: true,
    });
    let citus: boolean;
    try {
      // Fails fast with a clear connection error, and learns whether this is a Citus coordinator.
      const [row] = (await pool.query<{ citus: boolean }>("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus"))
        .rows;
      citus = row?.citus === true;
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw isStoreUnavailable(err) ? new StoreUnavailableError(describeServer(opts.databaseUrl), { cause: err }) : err;
    }
    return new ServerDb(pool, opts.databaseUrl, { listen, pooled: !!opts.directUrl, citus, cell: opts.cell });
  }
  const dir = opts.dataDir ?? "./.sluice";
  if (!dir.startsWith("memory://")) mkdirSync(dir, { recursive: true });
  return EmbeddedDb.open(dir);
}

/** The connection options for a URL; a host list that does not parse is a settings problem, reported as one. */
function targetOf(setting: string, url: string): ConnectionTarget {
  try {
    return connectionTarget(url, { connectTimeoutMs: CONNECT_TIMEOUT_MS });
  } catch (err) {
    throw new ConfigError([`${setting}: ${(err as Error).message}`]);
  }
}

/** Runs `fn` in a transaction, retrying on serialization failures and deadlocks. */
export async function withRetry<T>(db: Db, fn: (q: TxQueryable) => Promise<T>, opts: TxOptions & { attempts?: number } = {}): Promise<T> {
  return retrying(() => db.tx(fn, opts), opts.attempts);
}

/** A transaction Postgres aborted (deadlock or serialization failure), and whether it runs again. */
export interface AbortedTransaction {
  /** cell_moved: a Citus cell moved to another node under a statement run in steps (store-errors.ts). */
  reason: "deadlock" | "serialization" | "cell_moved";
  /** Postgres's own account: which processes waited for what. */
  detail: string | null;
  attempt: number;
  retried: boolean;
}

const abortListeners = new Set<(a: AbortedTransaction) => void>();

/**
 * Calls `cb` each time Postgres aborts one of this process's transactions by a deadlock or a
 * serialization failure (a warning and a metric, app.ts: invisible otherwise, since it is run
 * again). Returns the function that unsubscribes.
 */
export function onAbortedTransaction(cb: (a: AbortedTransaction) => void): () => void {
  abortListeners.add(cb);
  return () => abortListeners.delete(cb);
}

/** Runs `fn` again (up to `attempts` times) while it fails with a serialization failure or deadlock. */
export async function retrying<T>(fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!isRetryableDbError(err)) throw err;
      const { code, detail } = err as { code?: string; detail?: string };
      const aborted: AbortedTransaction = {
        reason: code === "40P01" ? "deadlock" : code === "CIINF" ? "cell_moved" : "serialization",
        detail: detail ?? null,
        attempt: i,
        retried: i < attempts,
      };
      for (const cb of abortListeners) cb(aborted);
      if (i >= attempts) throw err;
      await new Promise((r) => setTimeout(r, 5 * i + Math.random() * 10));
    }
  }
}
