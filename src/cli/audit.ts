import type { Db } from "../db/db.js";
import { attemptTimes, destinationLimits } from "../db/queries/stats.js";
import { bucketsFor } from "../policy/token-bucket.js";
import { auditBucket, perSecond } from "../policy/rate-audit.js";

// `sluice audit rate --destination ID [--since 15m|2h|RFC 3339] [--jitter-ms N] [--all]`: the attempts made to a
// destination, second by second, against its configured rate limit — and every window over it.

/** A duration back from now (30s, 15m, 2h, 1d) or an RFC 3339 time; `option` names it in the error. */
export function parseSince(raw: string | undefined, nowMs: number, option = "--since"): Date {
  if (raw === undefined) return new Date(nowMs - 15 * 60_000);
  const rel = /^(\d+)([smhd])$/.exec(raw);
  if (rel) {
    const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[rel[2] as "s" | "m" | "h" | "d"];
    return new Date(nowMs - Number(rel[1]) * unit);
  }
  const at = Date.parse(raw);
  if (Number.isNaN(at)) throw new Error(`${option} takes a duration (30s, 15m, 2h, 1d) or an RFC 3339 time, not '${raw}'`);
  return new Date(at);
}

/** Default allowance for the time between a token's grant and its request starting. */
export const DEFAULT_JITTER_MS = 100;

export async function auditRate(
  db: Db,
  opts: { destinationId: string; since: Date; all: boolean; jitterMs?: number },
  out: (line: string) => void,
): Promise<number> {
  const jitterMs = opts.jitterMs ?? DEFAULT_JITTER_MS;
  const dest = await destinationLimits(db, opts.destinationId);
  if (!dest) {
    out(`sluice audit: no destination '${opts.destinationId}' in this store (check DATABASE_URL / SLUICE_DATA_DIR)`);
    return 2;
  }
  const attempts = await attemptTimes(db, opts.destinationId, opts.since);
  const times = attempts.map((a) => a.started_at.getTime());
  const throttled = attempts.filter((a) => a.outcome === "throttled").length;
  out(`destination ${opts.destinationId}  rate_limit ${JSON.stringify(dest.rate_limit)}  max_concurrency ${dest.max_concurrency}`);
  out(`attempts since ${opts.since.toISOString()}: ${attempts.length} (answered 429: ${throttled})`);
  const buckets = bucketsFor(dest.rate_limit);
  if (buckets.length === 0) out("no rate limit configured: nothing to check windows against");
  else out(`windows widened by ${jitterMs} ms for the time between a token's grant and its request starting (--jitter-ms)`);

  const offendingSeconds = new Set<number>();
  let over = 0;
  for (const b of buckets) {
    const a = auditBucket(times, b, jitterMs);
    const sorted = [...times].sort((x, y) => x - y);
    for (const j of a.offending) offendingSeconds.add(Math.floor(sorted[j]! / 1000));
    over += a.offending.length;
    const head = `per-${a.window} bucket: capacity ${a.capacity}, ${round(a.perSecond)}/s`;
    out(
      a.worst === null
        ? `${head} — no window over the limit ✓`
        : `${head} — ${a.offending.length} send(s) ended a window over the limit ✗; worst: ${a.worst.count} sends in ` +
            `${a.worst.toMs - a.worst.fromMs} ms from ${new Date(a.worst.fromMs).toISOString()} (allowed ${round(a.worst.allowed)})`,
    );
  }

  const seconds = [...perSecond(times).entries()].sort((x, y) => x[0] - y[0]);
  const shown = opts.all ? seconds : seconds.slice(-120);
  if (shown.length < seconds.length) out(`(last ${shown.length} of ${seconds.length} seconds with attempts; --all for every one)`);
  const perSecLimit = dest.rate_limit?.max_per_second;
  out(`second (UTC)              attempts${perSecLimit !== undefined ? `  limit/s ${perSecLimit}` : ""}`);
  for (const [s, n] of shown) {
    out(
      `${new Date(s * 1000).toISOString().replace(".000Z", "Z")}  ${String(n).padStart(8)}${offendingSeconds.has(s) ? "  ✗ window over the limit ends here" : ""}`,
    );
  }
  return over > 0 ? 1 : 0;
}

function round(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}
