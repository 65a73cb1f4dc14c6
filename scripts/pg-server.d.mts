// Types for scripts/pg-server.mjs (plain JS, so it runs before node_modules exist).
export interface ThrowawayPostgres {
  url: string;
  port: number;
  dataDir: string;
  version: string;
  stop(): Promise<void>;
  /** Stops the server as `pg_ctl stop -m immediate` does; the data stays for restart(). */
  crash(): Promise<void>;
  /** Starts the server again on the same port and data; resolves once it accepts connections. */
  restart(): Promise<void>;
}
/**
 * fsync: durable against a machine crash (slow). crashSafe: acknowledged commits survive crash() (synchronous_commit on).
 * statStatements: shared_preload_libraries=pg_stat_statements, pg_stat_statements.track=all, track_io_timing=on.
 * icuLocale: the databases' default collation is this ICU locale (e.g. "en-US"), not C.
 */
export function startThrowawayPostgres(opts?: {
  fsync?: boolean;
  crashSafe?: boolean;
  statStatements?: boolean;
  icuLocale?: string;
  log?: (line: string) => void;
}): Promise<ThrowawayPostgres>;
/** With no command, holds until Ctrl-C or SIGTERM; else runs it with `env` added; `stop` at the end; the exit code. */
export function holdOrRun(name: string, command: string[], env: Record<string, string>, stop: () => Promise<unknown>): Promise<number>;
/** Runs `main(argv)` when `moduleUrl` is the script node was started with, exiting with its code. */
export function runIfMain(moduleUrl: string, name: string, main: (argv: string[]) => Promise<number>): void;
export function waitForChild(child: import("node:child_process").ChildProcess, errorPrefix: string, errorCode: number): Promise<number>;
/** A loopback port free a moment ago (another process may still take it first). */
export function freePort(): Promise<number>;
/** The pid in a data directory's postmaster.pid (the server's root process), or undefined when it is not running. */
export function readPostmasterPid(dataDir: string): number | undefined;
