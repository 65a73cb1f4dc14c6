import type { Logger } from "pino";
import type { Db } from "../db/db.js";
import { isStoreUnavailable } from "../db/db.js";
import { RECOVERY_CHANNEL, WORK_CHANNEL } from "../db/channels.js";
import { wakeForRequeued } from "../db/queries/deliveries.js";
import {
  advanceRecovery,
  lockNextRecovery,
  lockRecoveryDestination,
  pruneRecoveries,
  requeuePage,
  type RecoveryRow,
} from "../db/queries/recoveries.js";

// The recovery worker: takes running recoveries (POST /v1/destinations/{id}/recover) a page at a
// time, each page its own short transaction, so a million-row recovery never holds a lock for
// long and the dispatcher keeps claiming between pages. State lives only in the recoveries row
// (its position), so a crash loses at most the page in flight, which rolls back and is done again
// by whichever worker comes next. Woken by RECOVERY_CHANNEL; a slow poll finds recoveries left
// running by a worker that stopped.

export interface RecoveryWorkerOptions {
  /** Deliveries per page (SLUICE_RECOVERY_PAGE_SIZE). */
  pageSize: number;
  /** Finished recoveries are pruned after this long (SLUICE_RETENTION_HOURS). */
  retentionHours: number;
  /** Look for running recoveries this often even without a notification. */
  pollMs?: number;
}

export interface PageDone {
  recovery: RecoveryRow;
  /** Queued again by this page. */
  requeued: number;
  /** Queued again by the recovery so far. */
  total: number;
  /** The recovery reached the end of its range with this page. */
  done: boolean;
}

/** Runs one page of the stalest running recovery no other worker holds; null when there is none. */
export async function recoverOnePage(db: Db, pageSize: number): Promise<PageDone | null> {
  return db.tx(async (q) => {
    // The recovery's lock first, then the destination's: every page takes them in this order.
    const r = await lockNextRecovery(q);
    if (!r) return null;
    if (!(await lockRecoveryDestination(q, r.destination_id))) {
      // Deleted meanwhile: its deliveries stay as the delete left them.
      await advanceRecovery(q, r.id, { requeued: 0, lastOccurredAt: null, lastId: null }, true);
      return { recovery: r, requeued: 0, total: r.requeued, done: true };
    }
    const page = await requeuePage(q, r, pageSize);
    if (page.requeued > 0) await wakeForRequeued(q, r.destination_id);
    // A short page is the last one: nothing in the range is left after it.
    const done = page.scanned < pageSize;
    await advanceRecovery(q, r.id, page, done);
    return { recovery: r, requeued: page.requeued, total: r.requeued + page.requeued, done };
  });
}

const PRUNE_EVERY_MS = 10 * 60_000;

/** Starts the worker; the returned function stops it and waits for the page in flight. */
export async function startRecoveryWorker(db: Db, opts: RecoveryWorkerOptions, log: Logger): Promise<() => Promise<void>> {
  let stopped = false;
  let again = false;
  let draining: Promise<void> | null = null;
  let lastPrune = 0;

  const drain = async () => {
    do {
      again = false;
      try {
        if (Date.now() - lastPrune >= PRUNE_EVERY_MS) {
          lastPrune = Date.now();
          const pruned = await db.tx((q) => pruneRecoveries(q, opts.retentionHours));
          if (pruned > 0) log.debug({ recoveries: pruned }, "pruned finished recoveries past retention");
        }
        while (!stopped) {
          const p = await recoverOnePage(db, opts.pageSize);
          if (!p) break;
          // After the commit, like every other maker of due work.
          if (p.requeued > 0) await db.notify(WORK_CHANNEL);
          if (p.done) {
            log.info(
              {
                tenant_id: p.recovery.tenant_id,
                destination_id: p.recovery.destination_id,
                recovery_id: p.recovery.id,
                requeued: p.total,
              },
              "recovery done",
            );
          }
        }
      } catch (err) {
        log[isStoreUnavailable(err) ? "debug" : "warn"]({ err }, "recovery page failed; will try again");
      }
    } while (again && !stopped);
  };

  // One drain at a time per process; a wake-up during a drain makes it look once more.
  const kick = () => {
    if (stopped) return;
    if (draining) {
      again = true;
      return;
    }
    draining = drain().finally(() => (draining = null));
  };

  const unlisten = await db.listen(RECOVERY_CHANNEL, kick);
  const poll = setInterval(kick, opts.pollMs ?? 10_000);
  poll.unref();
  kick(); // recoveries a stopped worker left running
  return async () => {
    stopped = true;
    clearInterval(poll);
    await unlisten().catch(() => undefined);
    await draining;
  };
}
