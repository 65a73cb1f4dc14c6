// Where the time goes, for whoever tunes the engine: what the system's Postgres connections were
// doing during a run, a few of Sluice's own Prometheus figures, and which source was measured.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";

/**
 * Samples pg_stat_activity of one database twice a second and reports, per state and wait
 * event, how many of its client connections were in it on average. "idle in transaction" means
 * Postgres waits on the client mid-transaction (round trips); "active: CPU" means it computes;
 * "active: IO/LWLock:WAL…" means commits wait on the log.
 */
export class PgActivitySampler {
  private readonly totals = new Map<string, number>();
  private samples = 0;
  private timer: NodeJS.Timeout | null = null;
  private client: pg.Client | null = null;
  private busy = false;

  constructor(private readonly databaseUrl: string) {}

  async begin(): Promise<void> {
    this.client = new pg.Client({ connectionString: this.databaseUrl });
    this.client.on("error", () => undefined);
    await this.client.connect();
    this.timer = setInterval(() => void this.sample(), 500);
    this.timer.unref();
  }

  async end(): Promise<Record<string, number>> {
    if (this.timer) clearInterval(this.timer);
    while (this.busy) await new Promise((r) => setTimeout(r, 10));
    await this.client?.end().catch(() => undefined);
    const out: Record<string, number> = {};
    const sorted = [...this.totals.entries()].sort((a, b) => b[1] - a[1]);
    for (const [k, v] of sorted) out[k] = Math.round((v / Math.max(1, this.samples)) * 100) / 100;
    return out;
  }

  private async sample(): Promise<void> {
    if (this.busy || !this.client) return;
    this.busy = true;
    try {
      const rows = (await this.client.query<{ k: string; n: number }>(`
        SELECT CASE WHEN state = 'active' THEN 'active: ' || coalesce(wait_event_type || ':' || wait_event, 'CPU')
                    ELSE coalesce(state, '?') END AS k,
               count(*)::int AS n
        FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
        GROUP BY 1`)).rows;
      this.samples++;
      for (const r of rows) this.totals.set(r.k, (this.totals.get(r.k) ?? 0) + r.n);
    } catch {
      // a sample lost is no loss
    } finally {
      this.busy = false;
    }
  }
}

/** Reads a few of Sluice's own metrics from the /metrics text of each of its worker processes. */
export function summariseSluiceMetrics(texts: string[]): Record<string, number> {
  const lines = texts.flatMap((t) => t.split("\n"));
  // Summed over the processes, except where `max` asks for the worst one.
  const value = (name: string, labels?: string, max = false): number => {
    let sum = 0;
    for (const line of lines) {
      if (line.startsWith("#") || !line.startsWith(name)) continue;
      const rest = line.slice(name.length);
      if (!(rest.startsWith(" ") || rest.startsWith("{"))) continue;
      if (labels !== undefined && !rest.includes(labels)) continue;
      const v = Number(line.slice(line.lastIndexOf(" ") + 1)) || 0;
      sum = max ? Math.max(sum, v) : sum + v;
    }
    return sum;
  };
  const claims = value("sluice_claim_duration_seconds_count");
  const attempts = value("sluice_attempt_duration_seconds_count");
  const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
  return {
    claims,
    "claim avg ms": claims > 0 ? round((1000 * value("sluice_claim_duration_seconds_sum")) / claims) : 0,
    "deliveries per claim": claims > 0 ? round(attempts / claims) : 0,
    "attempt avg ms": attempts > 0 ? round((1000 * value("sluice_attempt_duration_seconds_sum")) / attempts) : 0,
    "attempts ok": value("sluice_attempts_total", 'outcome="success"'),
    "attempts failed": value("sluice_attempts_total", 'outcome="failure"'),
    "slot denied": value("sluice_concurrency_slot_denied_total"),
    "lease lost": value("sluice_lease_lost_total"),
    "process cpu s": round(value("sluice_process_process_cpu_seconds_total"), 1),
    "event loop lag p99 ms": round(1000 * value("sluice_process_nodejs_eventloop_lag_p99_seconds", undefined, true)),
  };
}

/** Which Sluice was measured: the commit, and whether src/ or migrations/ differ from it. */
export function sourceState(repo: string): { commit: string; localChanges: string[]; fingerprint: string } {
  const git = (args: string[]): string => {
    // --no-optional-locks: status must not refresh (write) the index of a repo others work in.
    const r = spawnSync("git", ["--no-optional-locks", ...args], { cwd: repo, encoding: "utf8" });
    return r.status === 0 ? r.stdout.trim() : "";
  };
  const commit = git(["rev-parse", "--short", "HEAD"]) || "unknown";
  const localChanges = git(["status", "--porcelain", "--", "src", "migrations", "package.json"]).split("\n").filter(Boolean);
  // A hash of the files themselves: two runs with the same fingerprint ran the same engine.
  const h = createHash("sha256");
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else h.update(p).update(readFileSync(p));
    }
  };
  for (const d of ["src", "migrations"]) walk(join(repo, d));
  return { commit, localChanges, fingerprint: h.digest("hex").slice(0, 12) };
}
