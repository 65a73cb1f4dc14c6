// Types for scripts/pgbouncer.mjs.
export interface PgBouncer {
  /** The database the starting URL named, through the pooler. */
  url: string;
  port: number;
  stop(): Promise<void>;
}
/** poolSize: server connections per database and user (default 4); maxClients: client connections (default 1000); users: more users it lets in (without a password), beside the URL's. */
export function startPgBouncer(
  databaseUrl: string,
  opts?: { poolSize?: number; maxClients?: number; users?: string[] },
): Promise<PgBouncer>;
/** `databaseUrl` with its host and port replaced by the pooler's. */
export function throughPooler(databaseUrl: string, port: number): string;
