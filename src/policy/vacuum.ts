// Vacuuming between autovacuum's rounds, or where there is none. Pure: the tables' counters in,
// what to run out. The janitor (dispatch/janitor.ts) applies it every few seconds.
//
// The embedded store: PGlite runs Postgres in single-user mode, where no autovacuum runs. Without
// this, every finished delivery leaves its old row version and its entry in the waiting index
// behind, and the claim's FIFO pick walks ever more of them — a 150,000-event run fell from
// ~5,000 to ~2,800 deliveries/s — and transaction ids would run out in the end. So every table.
//
// The server store: autovacuum visits a database once a minute (autovacuum_naptime, a server
// setting), and at 9,000 deliveries/s a minute leaves ~540,000 dead lease rows and ~300,000 dead
// versions of a thousand destination rows: the claim counts a destination's leases and picks ready
// destinations through indexes full of them (a 600,000-event run fell from ~9,500 to ~5,000
// deliveries/s before autovacuum had come once). Those two tables are small when vacuumed, so
// vacuuming them every few seconds costs milliseconds; the big ones (deliveries, attempts, events)
// stay autovacuum's, which paces itself.
//
// ANALYZE of every table on the embedded store, at autovacuum's rule, from a sample of 3,000 rows
// (statistics target 10, not Postgres's 100): there is no autovacuum to do it, and without column
// statistics Postgres guesses that `tenant_id = $1` keeps 0.5 % of a table. With one tenant owning
// every row, the API's reads then joined their good index with the tenant index in a bitmap, read
// the whole tenant index, or sorted all of a tenant's rows for a page of 100: at 300,000
// deliveries a destination's deliveries took 15–40 ms, the events of an hour 280–580 ms; with
// statistics 1–3 ms, as on a server (`npm run bench:api-reads`, CHANGELOG.md; the deliveries
// of one status, ~1 s, needed their filter rewritten too: queries/deliveries.ts). Without
// statistics too the publish's wake-up of 1,000 events' destinations took 1.15 s at 20,000
// destinations. The sample keeps ANALYZE short on the one session (deliveries at 300,000 rows:
// 27 ms, against 270 ms at 100), and the API's plans the same.
// Analyzing every table costs no measurable throughput (`bench:profile -- --embedded`, with and
// without: within the noise). Analyzing rarely is what hurts: statistics from a nearly empty
// table, kept while it filled, stalled delivery at ~60/s — autovacuum's rule re-analyzes as it grows.
// (On the server autovacuum analyzes every table as it always has.)

export interface TableStats {
  /** Schema-qualified, as Postgres prints regclass. */
  table: string;
  /** One of Sluice's own tables (the public schema), not a system catalog. */
  own: boolean;
  live: number;
  dead: number;
  /** Rows changed since the table was last analyzed (n_mod_since_analyze). */
  modified: number;
  /** Transactions since the table's oldest unfrozen row id (age(relfrozenxid)). */
  xidAge: number;
}

export interface VacuumTask {
  table: string;
  /** VACUUM it: dead rows past the threshold, or freezing due. */
  vacuum: boolean;
  freeze: boolean;
  /** ANALYZE it: its statistics are out of date. */
  analyze: boolean;
}

export interface VacuumPolicy {
  /** Vacuum once dead rows exceed base + share × live (autovacuum's rule, tighter: 50 + 5 %). */
  deadBase: number;
  deadShare: number;
  /** Freeze any table, system catalogs included, older than this many transactions (Infinity: never). */
  freezeAge: number;
  /** Only these of Sluice's own tables are vacuumed for dead rows (null: all of them). */
  only: readonly string[] | null;
  /** These of Sluice's own tables (null: all of them) are analyzed once rows changed exceed base + share × live (autovacuum's rule). */
  analyze: readonly string[] | null;
  analyzeBase: number;
  analyzeShare: number;
  /** default_statistics_target for those ANALYZEs (its sample is 300 × this many rows); null: the server's. */
  statisticsTarget: number | null;
  /**
   * Let VACUUM give empty pages at a table's end back to the file system. That takes a moment's
   * ACCESS EXCLUSIVE lock on the table: nothing for the embedded store's one session, a stall of
   * every claim and write-back on a server's hot tables, whose space is reused anyway.
   */
  truncate: boolean;
}

export const DEFAULT_VACUUM_POLICY: VacuumPolicy = {
  deadBase: 50,
  deadShare: 0.05,
  // Well before Postgres's own limits (vacuum_freeze_table_age 150 M, wraparound at ~2,000 M).
  freezeAge: 100_000_000,
  only: null,
  analyze: null,
  analyzeBase: 50,
  analyzeShare: 0.1,
  statisticsTarget: 10,
  truncate: true,
};

/** On a server: the small tables rewritten on every delivery, between autovacuum's rounds; freezing stays autovacuum's. */
export const SERVER_VACUUM_POLICY: VacuumPolicy = {
  ...DEFAULT_VACUUM_POLICY,
  // At 1,000 rows and 5 % that is 100 dead: at full speed each of the janitor's rounds finds tens
  // of thousands, so the base only keeps a quiet store from being vacuumed for a handful.
  deadBase: 1_000,
  freezeAge: Infinity,
  only: ["leases", "destinations"],
  analyze: [],
  statisticsTarget: null,
  truncate: false,
};

/** The tables to vacuum now, each once: Sluice's own first, then system catalogs due a freeze. */
export function vacuumPlan(tables: readonly TableStats[], policy: VacuumPolicy = DEFAULT_VACUUM_POLICY): VacuumTask[] {
  const ordered = [...tables.filter((t) => t.own), ...tables.filter((t) => !t.own)];
  return ordered.flatMap((t) => {
    const freeze = t.xidAge > policy.freezeAge;
    const dead = t.own && named(policy.only, t.table) && t.dead > policy.deadBase + policy.deadShare * t.live;
    const analyze = t.own && named(policy.analyze, t.table) && t.modified > policy.analyzeBase + policy.analyzeShare * t.live;
    return freeze || dead || analyze ? [{ table: t.table, vacuum: freeze || dead, freeze, analyze }] : [];
  });
}

/** A policy's list of tables: null names every one. */
const named = (tables: readonly string[] | null, table: string): boolean => tables === null || tables.includes(table);
