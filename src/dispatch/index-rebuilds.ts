import type { Logger } from "pino";
import type { Db } from "../db/db.js";
import {
  dropLeftoverIndex,
  indexStats,
  rebuildBaselines,
  rebuildIndex,
  releaseRebuildLease,
  takeRebuildLease,
} from "../db/queries/maintenance.js";
import { metrics } from "../metrics.js";
import { DEFAULT_REBUILD_POLICY, rebuildPlan, type RebuildPolicy, type RebuildTask } from "../policy/index-rebuild.js";
import { everyRound } from "./rounds.js";

// The janitor's index rebuilds: what policy/index-rebuild.ts says, run by one worker at a time
// (a row lease), one index after another, each with REINDEX CONCURRENTLY so that publishing and
// delivering go on meanwhile.

/** How often the indexes' sizes are looked at: a cheap catalog read. */
const EVERY_MS = 60_000;
/**
 * The lease outlives any rebuild Sluice's tables should need (a REINDEX reads its table twice), so
 * a second worker never starts beside a running one; a worker that died holding it delays the
 * next round by at most this long.
 */
const LEASE_SECONDS = 3600;

export type RebuildDone = RebuildTask & { ms: number; bytesAfter?: number };

/** One round: the plan carried out, unless another worker holds the lease (null). */
export async function rebuildIndexesOnce(
  db: Db,
  policy: RebuildPolicy = DEFAULT_REBUILD_POLICY,
  stopped: () => boolean = () => false,
): Promise<RebuildDone[] | null> {
  // Cheap reads first: most rounds find nothing to do and take no lease.
  const plan = rebuildPlan(await indexStats(db), await rebuildBaselines(db), Date.now(), policy);
  if (plan.length === 0) return [];
  if (!(await takeRebuildLease(db, LEASE_SECONDS))) return null;
  const done: RebuildDone[] = [];
  try {
    for (const task of plan) {
      if (stopped()) break;
      const startedAt = performance.now();
      if (task.kind === "drop") {
        await dropLeftoverIndex(db, task.index);
        done.push({ ...task, ms: Math.round(performance.now() - startedAt) });
        continue;
      }
      const after = await rebuildIndex(db, task.index);
      const ms = performance.now() - startedAt;
      metrics.indexRebuilds.inc({ index: task.index });
      metrics.indexRebuildDuration.observe(ms / 1000);
      done.push({ ...task, ms: Math.round(ms), bytesAfter: after.bytes });
    }
  } finally {
    await releaseRebuildLease(db);
  }
  return done;
}

export function startIndexRebuilds(db: Db, log: Logger, policy: RebuildPolicy = DEFAULT_REBUILD_POLICY): () => void {
  return everyRound("index rebuild", log, { firstMs: EVERY_MS, everyMs: EVERY_MS }, async (stopped) => {
    for (const d of (await rebuildIndexesOnce(db, policy, stopped)) ?? []) {
      if (d.kind === "drop") log.warn({ index: d.index, ms: d.ms }, "dropped an interrupted index rebuild's leftover copy");
      else if (d.kind === "rebuild")
        log.info(
          { index: d.index, table: d.table, bytesBefore: d.bytes, bytesAfter: d.bytesAfter, bloat: d.bloat, ms: d.ms },
          "rebuilt an index that held deliveries had left mostly empty",
        );
    }
  });
}
