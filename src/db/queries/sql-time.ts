// The statement's clock in SQL, in the forms every store runs: plain Postgres, PGlite and a Citus
// cell. Citus checks a write before it sends it to the node holding the cell, and refuses two
// ways of reading the clock there (docs/citus.md has the table):
//
// * now() inside CASE or COALESCE ("non-IMMUTABLE functions are not allowed in CASE or
//   COALESCE statements"). NOW, a subquery, is the same instant (now() is the transaction's start
//   in every form) and passes; it is planned once per statement, as an InitPlan.
// * a STABLE function given a column ("STABLE functions used in UPDATE queries cannot be called
//   with column references"): now() + make_interval(secs => col) is one, since adding an interval
//   to a timestamptz depends on the time zone. nowPlusSeconds adds the seconds to the epoch and
//   turns that back into a time: the same instant, to the microsecond, by immutable functions.
//   The epoch is read in a subquery, so that it may sit inside CASE too, and as float8: Citus
//   fails with "unrecognized node type" on a cast applied to a subquery's value, which adding a
//   numeric epoch to a float8 would need.
//
// Elsewhere now() is written as it is.

/** now(), where it sits inside CASE or COALESCE. */
export const NOW = "(SELECT now())";

/** now() plus `seconds` (an SQL number expression, which may name columns). */
export function nowPlusSeconds(seconds: string): string {
  return `to_timestamp((SELECT extract(epoch FROM now())::float8) + (${seconds}))`;
}
