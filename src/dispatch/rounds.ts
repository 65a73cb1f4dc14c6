import type { Logger } from "pino";
import { isStoreUnavailable } from "../db/db.js";

/**
 * Runs `round` `firstMs` after the call, then again `everyMs` after each round has ended (never two
 * at once), until the returned function is called; `stopped()` tells a round that loops to stop
 * early. A round that throws is logged — "<what> failed; will try again", at debug while the store
 * is unreachable (the outage is logged once elsewhere) — and the next round comes as usual.
 */
export function everyRound(
  what: string,
  log: Logger,
  timing: { firstMs: number; everyMs: number },
  round: (stopped: () => boolean) => Promise<void>,
): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout;
  const tick = async () => {
    try {
      await round(() => stopped);
    } catch (err) {
      log[isStoreUnavailable(err) ? "debug" : "warn"]({ err }, `${what} failed; will try again`);
    }
    if (!stopped) timer = setTimeout(run, timing.everyMs);
  };
  // tick catches everything it can throw; the timer only needs a function that returns nothing.
  const run = () => void tick();
  timer = setTimeout(run, timing.firstMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
