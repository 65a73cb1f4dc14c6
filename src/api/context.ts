import type { Logger } from "pino";
import type { Db } from "../db/db.js";
import type { Config } from "../config.js";
import type { RoutingCache } from "../events/publish.js";
import type { Tracing } from "../tracing/tracing.js";

// What the API's routes are built with: shared by server.ts and every file in routes/.

export interface ApiContext {
  db: Db;
  /** The cell `db` is (docs/citus.md), when this API is one of several a process serves. */
  cell?: string;
  config: Readonly<Config>;
  log: Logger;
  version: string;
  /** Set by buildApi when absent. */
  routing?: RoutingCache;
  /** Spans of publishes (docs/tracing.md); absent: off. */
  tracing?: Tracing;
  /**
   * Start-up still to finish once the port is open (the default tenant is made only then, so a
   * start that fails on a busy port has not spent its shown-once key): requests wait for it.
   */
  ready?: Promise<unknown>;
}
