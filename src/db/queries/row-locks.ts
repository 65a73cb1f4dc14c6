// The one order in which a transaction takes several destination row locks: by id. Two
// transactions that each wait for a row the other holds deadlock, and Postgres then aborts one
// after deadlock_timeout (1 s) — a publish and a result write-back did, hundreds of times in ten
// minutes under a mixed workload. Taken in one global order, no such cycle can form.
//
// An UPDATE never promises an order: it locks rows as its plan reaches them, and a hash join
// reaches them in heap order, whatever an ORDER BY inside a subquery says. A SELECT … ORDER BY …
// FOR UPDATE does: its row locks are taken above the sort, in the order it returns them. So a
// statement that changes several destination rows locks them first with lockedInIdOrder (as a CTE
// the UPDATE joins, so every row it touches was locked there first, in order), or the caller
// holds their locks already. A claim never waits (SKIP LOCKED), so it cannot be part of a cycle.

/**
 * SQL: `SELECT id FROM destinations d … ORDER BY d.id FOR UPDATE OF d` over the ids in the text[]
 * `param`. `join` and `where` narrow it (the rows to lock, as of the statement's snapshot; a row
 * that changed meanwhile is checked again once locked); `skipLocked` leaves rows another
 * transaction holds (for safety nets that look again later).
 */
export function lockedInIdOrder(param: string, opts: { join?: string; where?: string; skipLocked?: boolean } = {}): string {
  return `SELECT d.id FROM destinations d ${opts.join ?? ""}
           WHERE d.id = ANY(${param}::text[]) ${opts.where ? `AND ${opts.where}` : ""}
           ORDER BY d.id FOR UPDATE OF d${opts.skipLocked ? " SKIP LOCKED" : ""}`;
}
