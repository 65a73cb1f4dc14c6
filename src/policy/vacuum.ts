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
// ANALYZE only of `destinations` on the embedded store: it has always planned without column
// statistics on the rest, and with them its statements did worse — `npm run bench:profile --
// --embedded` fell from ~4,400–4,800 to ~3,600–3,900 deliveries/s with ANALYZE of every table at
// autovacuum's rule, and analyzing at most every ten minutes (statistics from a nearly empty
// table, kept while it filled) stalled delivery at ~60/s. VACUUM still keeps each table's size
// estimate (pg_class) current. But without them the publish's wake-up of its destinations took
// the partial index of live destinations (`deleted_at IS NULL`, guessed to hold a handful) and
// compared every destination of the tenant with every destination of the batch: 1.15 s for a
// batch of 1,000 events at 20,000 destinations, 22 ms with statistics. Statistics of
// `destinations` say what fraction is live, paused, deleted — which hardly moves as the table
// grows. (On the server autovacuum analyzes every table as it always has.)

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
  freeze: boolean;
  /** Its statistics too (VACUUM (ANALYZE)). */
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
  /** These of Sluice's own tables are analyzed once rows changed exceed base + share × live (autovacuum's rule). */
  analyze: readonly string[];
  analyzeBase: number;
  analyzeShare: number;
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
  analyze: ["destinations"],
  analyzeBase: 50,
  analyzeShare: 0.1,
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
  truncate: false,
};

/** The tables to vacuum now, each once: Sluice's own first, then system catalogs due a freeze. */
export function vacuumPlan(tables: readonly TableStats[], policy: VacuumPolicy = DEFAULT_VACUUM_POLICY): VacuumTask[] {
  const ordered = [...tables.filter((t) => t.own), ...tables.filter((t) => !t.own)];
  return ordered.flatMap((t) => {
    const freeze = t.xidAge > policy.freezeAge;
    const dead = t.own && (policy.only === null || policy.only.includes(t.table)) && t.dead > policy.deadBase + policy.deadShare * t.live;
    const analyze = t.own && policy.analyze.includes(t.table) && t.modified > policy.analyzeBase + policy.analyzeShare * t.live;
    return freeze || dead || analyze ? [{ table: t.table, freeze, analyze }] : [];
  });
}
