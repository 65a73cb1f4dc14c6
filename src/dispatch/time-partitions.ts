import type { Logger } from "pino";
import type { Db } from "../db/db.js";
import { createTimePartition, dropTimePartition, listTimePartitions, tryPartitionsLock } from "../db/queries/partitions.js";
import { planPartitions, type PartitionPlan } from "../policy/time-partitions.js";
import { everyRound } from "./rounds.js";

// The janitor's upkeep of the time partitions of attempts (policy/time-partitions.ts says which):
// the partitions ahead made, those past retention dropped, one worker at a time.

const TABLE = "attempts";

/**
 * Making or dropping a partition locks attempts for a moment, and waits for the statements running
 * on it first; while it waits, new ones wait behind it. So it waits no longer than this, and a
 * change that could not get its lock is tried again next round.
 */
const LOCK_TIMEOUT_MS = 500;

/** At 30 s a round, a partition one minute wide (the narrowest) is made at least three rounds ahead. */
const EVERY_MS = 30_000;

export interface PartitionRound {
  created: string[];
  dropped: string[];
  /** Ranges the default partition already held attempts up to the end of: left to it. */
  leftToDefault: string[];
}

/**
 * One round: plans from the partitions there are, then makes and drops each in a transaction of
 * its own holding the partitions lock. Null when another worker holds it.
 */
export async function partitionOnce(db: Db, retentionHours: number, lockTimeoutMs = LOCK_TIMEOUT_MS): Promise<PartitionRound | null> {
  const plan = await db.tx(async (q): Promise<PartitionPlan | null> => {
    if (!(await tryPartitionsLock(q))) return null;
    const { nowMs, partitions } = await listTimePartitions(q, TABLE);
    return planPartitions(TABLE, partitions, nowMs, retentionHours);
  });
  if (!plan) return null;
  const round: PartitionRound = { created: [], dropped: [], leftToDefault: [] };
  // Another worker took the lock since the plan: the round is its to finish.
  for (const part of plan.create) {
    const made = await db.tx(async (q) => ((await tryPartitionsLock(q)) ? createTimePartition(q, TABLE, part, lockTimeoutMs) : null));
    if (made === null) return round;
    (made ? round.created : round.leftToDefault).push(part.name);
  }
  for (const name of plan.drop) {
    const gone = await db.tx(async (q) => (await tryPartitionsLock(q)) && (await dropTimePartition(q, name, lockTimeoutMs), true));
    if (!gone) return round;
    round.dropped.push(name);
  }
  return round;
}

/** Rounds from the start (the first partitions are wanted before the first attempt), every 30 s. */
export function startTimePartitions(db: Db, log: Logger, retentionHours: number): () => void {
  return everyRound("partitioning attempts", log, { firstMs: 0, everyMs: EVERY_MS }, async () => {
    const r = await partitionOnce(db, retentionHours);
    if (r && (r.created.length || r.dropped.length || r.leftToDefault.length)) log.info(r, "time partitions of attempts made and dropped");
  });
}
