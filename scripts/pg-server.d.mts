// Types for scripts/pg-server.mjs (plain JS, so it runs before node_modules exist).
export interface ThrowawayPostgres {
  url: string;
  port: number;
  dataDir: string;
  version: string;
  stop(): Promise<void>;
}
export function startThrowawayPostgres(opts?: { fsync?: boolean; log?: (line: string) => void }): Promise<ThrowawayPostgres>;
export function waitForChild(child: import("node:child_process").ChildProcess, errorPrefix: string, errorCode: number): Promise<number>;
