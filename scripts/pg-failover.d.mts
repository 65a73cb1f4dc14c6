// Types for scripts/pg-failover.mjs.
export interface PostgresNode {
  name: string;
  port: number;
  dataDir: string;
  /** True while its postmaster lives. */
  readonly running: boolean;
}

export interface ReplicatedPair {
  nodes: [PostgresNode, PostgresNode];
  readonly primary: PostgresNode;
  readonly standby: PostgresNode;
  /** postgres://postgres@127.0.0.1:A,127.0.0.1:B/<database>?target_session_attrs=<attrs> (default read-write). */
  url(database?: string, attrs?: string): string;
  /** As `pg_ctl stop -m immediate`. */
  crashPrimary(): Promise<void>;
  /** As `pg_ctl stop -m fast`. */
  stopPrimary(): Promise<void>;
  /** `SELECT pg_promote()`; resolves once the standby takes writes, and it is the primary from then on. */
  promoteStandby(): Promise<void>;
  /** The stopped old primary becomes a synchronous standby of the new one (fresh base backup). */
  rejoin(): Promise<void>;
  stop(): Promise<void>;
}

export function startReplicatedPair(): Promise<ReplicatedPair>;
/** Runs one statement as `postgres` on the node at `port` (database postgres). */
export function sqlAt<R = Record<string, unknown>>(port: number, text: string, params?: unknown[]): Promise<R[]>;
