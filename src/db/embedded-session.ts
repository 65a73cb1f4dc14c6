import { existsSync } from "node:fs";
import path from "node:path";
import { PGlite, parse, protocol, types } from "@electric-sql/pglite";
import { StatementNames, TX_STEPS, againIfReshaped, isStaleShape, type TxStep } from "./statements.js";
import { bindExecute, columnsOf, concat, readAnswer, type Column } from "./embedded-wire.js";

const { serialize } = protocol;
type BackendMessage = Awaited<ReturnType<PGlite["execProtocolStream"]>>[number];

// The embedded store's one Postgres session: PGlite, and how statements run on it. It lives on a
// thread of its own (embedded-thread.ts runs it in embedded-worker.ts), so that the WebAssembly
// Postgres runs beside Sluice's JavaScript instead of taking turns with it. The thread runs these
// operations one at a time, in the order sent; EmbeddedDb (db.ts) keeps each transaction's calls
// together in that order.

/** A statement PGlite has parsed under a name: what binding it needs and what its rows look like. */
interface Prepared {
  paramTypes: number[];
  /** Its rows' columns, from the RowDescription sent once when prepared (null: it returns no rows). */
  columns: Column[] | null;
}

/** What EmbeddedDb asks of the session; each operation runs after the one before it has finished. */
export interface SessionOps {
  /** One statement on its own (outside any transaction), flushed to the folder. */
  query(sql: string, params: unknown[]): Promise<unknown[]>;
  /**
   * One statement inside the current transaction, with the steps of `before` ahead of it and,
   * with `commit`, COMMIT behind it (then flushed), in one exchange. Returns the rows, and the
   * tag COMMIT answered with ("ROLLBACK" when the transaction had failed) when it was sent. With
   * `commit` the transaction is over when it answers, whatever the outcome (a failure: the
   * thread rolls it back, embedded-worker.ts).
   */
  run(sql: string, params: unknown[], before: TxStep[], commit: boolean): Promise<{ rows: unknown[]; tag: string | null }>;
  /** Transaction steps alone, in one exchange; returns the last one's tag (flushed after a COMMIT). */
  steps(steps: TxStep[]): Promise<string>;
  /** A script of statements without parameters (simple protocol): on its own, or inside the current transaction. */
  script(sql: string): Promise<void>;
  close(): Promise<void>;
}

export class EmbeddedSession implements SessionOps {
  /**
   * Statements that run again and again are parsed and planned once, as on the server store
   * (StatementNames): PGlite's own query() parses, plans and describes every statement on every
   * call, in six exchanges with the WebAssembly Postgres — for the claim's statements that was
   * more than their execution. A named one runs in one exchange: bind, execute, sync.
   */
  private readonly statements = new StatementNames();
  private readonly prepared = new Map<string, Prepared>();

  private constructor(private readonly pglite: PGlite) {}

  /**
   * Opens the store in `dir` (`memory://…`: in memory). `existing`: the folder must hold a store
   * already — PGlite makes a new, empty one in a folder without one, which must never take the
   * place of a store that was there (reopening after a crash: the folder deleted or unmounted
   * meanwhile). Checked here, just before PGlite looks, so the two cannot drift apart by more
   * than a moment.
   */
  static async open(dir: string, opts: { existing?: boolean } = {}): Promise<EmbeddedSession> {
    const holdsStore = () => {
      if (opts.existing && !existsSync(path.join(dir, "PG_VERSION"))) throw new Error(`${dir} no longer holds the store (no PG_VERSION)`);
    };
    holdsStore();
    // New WAL segments are not written full of zeros first: PGlite's file system writes through
    // JavaScript, and a 16 MB segment's zeros every ~4,000 deliveries cost ~3 % of the CPU. (The
    // setting exists for file systems where the zeros buy nothing; PGlite never flushes anyway.)
    const startParams = [...PGlite.defaultStartParams, "-c", "wal_init_zero=off"];
    // int8 as its text, as node-postgres returns it from a server (PGlite's default is a BigInt):
    // a statement's values have one type whichever store runs it (store-contract.test.ts).
    const parsers = { [types.INT8]: (text: string) => text };
    try {
      return new EmbeddedSession(await PGlite.create(dir.startsWith("memory://") ? undefined : dir, { startParams, parsers }));
    } catch (err) {
      // The folder may have gone while PGlite opened it (deleted, moved, unmounted just after the
      // check above): then that is the reason to tell, not the file error it caused.
      holdsStore();
      throw err;
    }
  }

  async query(sql: string, params: unknown[]): Promise<unknown[]> {
    // On its own a statement refused for a stale shape (see run) is simply run again.
    const { rows } = await againIfReshaped(() => this.run(sql, params, [], false));
    await this.pglite.syncToFs();
    return rows;
  }

  async run(sql: string, params: unknown[], before: TxStep[], commit: boolean): Promise<{ rows: unknown[]; tag: string | null }> {
    const name = this.statements.name(sql);
    if (name === null) {
      if (before.length > 0) await this.steps(before);
      const rows = (await this.pglite.query(sql, params)).rows;
      return { rows, tag: commit ? await this.steps(["COMMIT"]) : null };
    }
    const p = await this.prepare(name, sql);
    const parts = [...(await this.stepCalls(before)), ...this.call(name, p, params), ...(commit ? await this.stepCalls(["COMMIT"]) : [])];
    let answer: { rows: unknown[]; tags: string[] };
    try {
      // The steps before it answer first, each ending with its CommandComplete: its rows come after.
      answer = readAnswer(await this.exchange(...parts, serialize.sync()), before.length, p.columns);
    } catch (err) {
      // A table it reads changed shape (a migration): Postgres refuses the cached plan ("cached
      // plan must not change result type"); prepare and describe it again next time.
      if (isStaleShape(err)) await this.forget(name);
      throw err;
    }
    if (commit) await this.pglite.syncToFs();
    return { rows: answer.rows, tag: commit ? (answer.tags.at(-1) ?? "") : null };
  }

  async steps(steps: TxStep[]): Promise<string> {
    const tag = readAnswer(await this.exchange(...(await this.stepCalls(steps)), serialize.sync()), -1, null).tags.at(-1) ?? "";
    if (steps.includes("COMMIT")) await this.pglite.syncToFs();
    return tag;
  }

  async script(sql: string): Promise<void> {
    readAnswer(await this.exchange(serialize.query(sql)), -1, null);
    await this.pglite.syncToFs();
  }

  async close(): Promise<void> {
    await this.pglite.close();
  }

  /** `name` prepared from `text` (once: parsed, described, planned on first use). */
  private async prepare(name: string, text: string): Promise<Prepared> {
    let p = this.prepared.get(name);
    if (!p) {
      const described = await this.pglite.execProtocolStream(
        concat([serialize.parse({ name, text }), serialize.describe({ type: "S", name }), serialize.sync()]),
        { syncToFs: false },
      );
      const rows = described.find((m) => m.name === "rowDescription") as
        (BackendMessage & { fields: { name: string; dataTypeID: number }[] }) | undefined;
      p = {
        paramTypes: parse.parseDescribeStatementResults(described),
        // With PGlite's type parsers (its defaults and any it was given): rows come out as its query() returns them.
        columns: rows ? columnsOf(rows.fields, this.pglite.parsers) : null,
      };
      this.prepared.set(name, p);
    }
    return p;
  }

  /** Bind and execute of prepared statement `name` (its values serialised as PGlite's query() does, by parameter type). */
  private call(name: string, p: Prepared, params: unknown[]): Uint8Array[] {
    const values = params.map((v, i) => (v === null || v === undefined ? null : (this.pglite.serializers[p.paramTypes[i]!] ?? String)(v)));
    // For a value of its parameter's type every serializer of PGlite's answers with text; a value
    // of another kind (whatever it then makes of it) goes through PGlite's own writer, as before.
    if (values.every((v) => v === null || typeof v === "string")) return [bindExecute(name, values)];
    return [serialize.bind({ statement: name, values }), serialize.execute({})];
  }

  /** Bind and execute of each transaction step (BEGIN, COMMIT, …), prepared under its own name. */
  private async stepCalls(steps: TxStep[]): Promise<Uint8Array[]> {
    const parts: Uint8Array[] = [];
    for (const step of steps) parts.push(...this.call(step, await this.prepare(step, TX_STEPS[step]), []));
    return parts;
  }

  private async forget(name: string): Promise<void> {
    this.prepared.delete(name);
    await this.exchange(serialize.close({ type: "S", name }), serialize.sync()).catch(() => undefined);
  }

  /**
   * Protocol messages in, the answer's bytes out (embedded-wire.ts reads them). Through PGlite's
   * raw stream: its other ways in (execProtocolRaw too) parse every message of the answer into
   * objects as it comes, whether or not anyone reads them.
   */
  private async exchange(...parts: Uint8Array[]): Promise<Uint8Array> {
    const chunks: Uint8Array[] = [];
    // A chunk is a view of PGlite's memory, valid only during the call: copied.
    await this.pglite.execProtocolRawStream(concat(parts), { syncToFs: false, onRawData: (chunk) => void chunks.push(chunk.slice()) });
    return chunks.length === 1 ? chunks[0]! : concat(chunks);
  }
}
