// Types for scripts/citus.mjs.
export const CITUS_VERSION: string;
/** /usr/lib/postgresql/15/lib/citus.so: its presence (with the control file) means installed. */
export const CITUS_LIBRARY: string;

export interface CitusCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres on the coordinator. */
  coordinatorUrl: string;
  workerUrls: string[];
  coordinatorPort: number;
  workerPorts: number[];
  postgresVersion: string;
  citusVersion: string;
  /** How long starting took, from nothing to the workers added. */
  startMs: number;
  /** Each node's postmaster pid (the root of its processes), the coordinator first; null for a node not running. */
  postmasterPids(): (number | null)[];
  /** Stops every node and deletes its data. */
  stop(): Promise<void>;
}

export function citusInstalled(): boolean;
/** Builds and installs Citus from the vendored source when absent (root); true when it built. */
export function ensureCitus(opts?: { log?: (line: string) => void }): boolean;
/** A coordinator and `workers` (default 2) workers on loopback ports; `fsync`: durable nodes (default false). */
export function startCitusCluster(opts?: { workers?: number; fsync?: boolean; log?: (line: string) => void }): Promise<CitusCluster>;
