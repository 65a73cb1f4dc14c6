import type pg from "pg";

// What both stores share about statements: which texts run prepared, and the settings of a
// transaction that plans generically.

/**
 * Names statements that run again and again, so each connection parses and plans them once
 * (node-postgres prepares a named statement on its first use per connection). The claim's and
 * write-back's statements take a few milliseconds to plan, on every call when unnamed. A text
 * is named from its third use, so one-off statements (migrations, rare admin queries) take no
 * slot; at most `max` texts are named, since every connection keeps a plan for each.
 */
export class StatementNames {
  private readonly seen = new Map<string, number>();
  private readonly names = new Map<string, string>();

  constructor(private readonly max = 120) {}

  /** The query config for `text`: named once it has earned a name, else plain. */
  config(text: string, values: unknown[]): pg.QueryConfig {
    const name = this.name(text);
    return name ? { name, text, values } : { text, values };
  }

  /** The name `text` runs under, counting this use; null while it has not earned one. */
  name(text: string): string | null {
    const named = this.names.get(text);
    if (named) return named;
    if (this.names.size < this.max) {
      const uses = (this.seen.get(text) ?? 0) + 1;
      if (uses >= 3) {
        this.seen.delete(text);
        const name = `s${this.names.size + 1}`;
        this.names.set(text, name);
        return name;
      }
      // Texts seen once or twice: bounded too, so a stream of one-off texts cannot grow it.
      if (uses > 1 || this.seen.size < 10 * this.max) this.seen.set(text, uses);
    }
    return null;
  }
}

/**
 * feature_not_supported: what Postgres answers a prepared statement whose rows changed shape
 * under it ("cached plan must not change result type": a migration added, dropped or retyped a
 * column it returns) — on every later use, until it is prepared again. Both stores prepare it
 * anew and run the statement, or its transaction, once more (see `againIfReshaped`).
 */
const STALE_SHAPE = "0A000";
/**
 * The function of Postgres that raises it (an error's `routine`, field R of the protocol, sent
 * whatever the server's language — unlike the message). Other features not supported share the
 * code; they are no stale plan, and are not retried.
 */
const STALE_SHAPE_ROUTINE = "RevalidateCachedQuery";

export function isStaleShape(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const { code, routine } = err as { code?: unknown; routine?: unknown };
  // Without a routine (a proxy that drops the field), the code alone decides.
  return code === STALE_SHAPE && (routine === undefined || routine === STALE_SHAPE_ROUTINE);
}

/**
 * Runs `run` a second time when the first failed on a statement whose rows changed shape: by then
 * the store has dropped what it had prepared (a transaction's work was rolled back with it). A
 * second failure is final — another feature_not_supported is no stale plan.
 */
export async function againIfReshaped<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (!isStaleShape(err)) throw err;
    return run();
  }
}

/** TxOptions.genericPlans: the settings of the transaction. */
export const GENERIC_SETTINGS = [
  ["plan_cache_mode", "force_generic_plan"],
  ["enable_hashjoin", "off"],
  ["enable_mergejoin", "off"],
  ["enable_seqscan", "off"],
  ["jit", "off"],
] as const;

/** A transaction's own statements on the embedded store, prepared once like any other. */
export const TX_STEPS = {
  BEGIN: "BEGIN",
  COMMIT: "COMMIT",
  ROLLBACK: "ROLLBACK",
  // TxOptions.genericPlans: BEGIN_GENERIC's settings, as one statement.
  GENERIC: `SELECT ${GENERIC_SETTINGS.map(([k, v]) => `set_config('${k}', '${v}', true)`).join(", ")}`,
};
export type TxStep = keyof typeof TX_STEPS;
