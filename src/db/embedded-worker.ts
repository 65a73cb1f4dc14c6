import { parentPort, workerData } from "node:worker_threads";
import { EmbeddedSession } from "./embedded-session.js";
import { commits, isFatal, toWire, type Answer, type Call, type WorkerData } from "./embedded-thread.js";

// The embedded store's own thread (embedded-thread.ts): opens the session, then runs the calls it
// is sent one after the other, in the order sent.

const port = parentPort!;
const { dir, existing } = workerData as WorkerData;
const session = EmbeddedSession.open(dir, { existing });
session.then(
  () => port.postMessage({ id: 0, ok: true } satisfies Answer),
  (err: unknown) => port.postMessage({ id: 0, err: toWire(err) } satisfies Answer),
);

let turn: Promise<void> = Promise.resolve();
port.on("message", (c: Call) => {
  turn = turn.then(async () => {
    let answer: Answer;
    try {
      const s = await session;
      answer = { id: c.id, ok: await (s[c.op] as (...args: unknown[]) => Promise<unknown>).apply(s, c.args) };
    } catch (err) {
      answer = { id: c.id, err: toWire(err) };
      if (isFatal(err)) {
        // PGlite is broken: the thread ends, and EmbeddedDb opens the folder again.
        port.postMessage(answer);
        process.exit(70);
      }
      // A run that was to commit failed before its COMMIT ran (Postgres skips the rest of the
      // exchange): its transaction is still open, and aborted. It ends here, before the calls
      // sent behind it run — they are the next transaction's (EmbeddedDb hands the session on
      // as soon as a COMMIT has gone out).
      if (commits(c)) await (await session).steps(["ROLLBACK"]).catch(() => undefined);
    }
    port.postMessage(answer);
  });
});
