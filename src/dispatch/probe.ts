import type { Logger } from "pino";
import type { Db } from "../db/db.js";
import { isStoreUnavailable, withRetry } from "../db/db.js";
import type { ClaimedDestination } from "../db/queries/claim.js";
import { applyProbe } from "../db/queries/results.js";
import { alertInput, recordAlerts } from "../alerts/alerts.js";
import { signedRequest, type Sender, type SendRequest } from "../delivery/sender.js";
import { classify } from "../policy/outcome.js";
import { healthClass } from "../policy/health.js";
import { newId } from "../ids.js";
import { metrics } from "../metrics.js";
import { faultDetail } from "./claim-plan.js";
import type { SetAsides } from "./set-aside.js";

// A paused destination's probe: a signed `webhook.probe` with empty data, sent when a claim finds
// it due. Success resumes the destination on a ramp; failure schedules the next probe (both
// decided in applyProbe, in one transaction with the attempt it records).

export interface ProbeDeps {
  db: Db;
  sender: Sender;
  log: Logger;
  userAgent: string;
  asides: SetAsides;
  /** Alerts were recorded: publish them without waiting for a poll. */
  onAlerts?: () => void;
  /** Wake a claim loop: the destination was resumed, or its next probe is due sooner than planned. */
  wake: () => void;
}

/** Sends one probe and applies its answer; resolves when done, never rejects. Null: not sent (set aside). */
export function probe(deps: ProbeDeps, dest: ClaimedDestination): Promise<void> | null {
  const probeId = newId("prb");
  const nowMs = Date.now();
  let request: SendRequest;
  try {
    const body = `{"type":"webhook.probe","timestamp":"${new Date(nowMs).toISOString()}","data":{}}`;
    request = signedRequest(dest, probeId, body, nowMs, deps.userAgent);
  } catch (error) {
    deps.asides.add({ id: dest.id, code: "internal_error", detail: faultDetail("signing its probe", error), error }, []);
    return null;
  }
  return sendAndApply(deps, dest, probeId, nowMs, request).catch((err: unknown) =>
    deps.log[isStoreUnavailable(err) ? "debug" : "error"](
      { err, destination_id: dest.id },
      "probe failed to record; the next one is already scheduled",
    ),
  );
}

async function sendAndApply(
  deps: ProbeDeps,
  dest: ClaimedDestination,
  probeId: string,
  nowMs: number,
  request: SendRequest,
): Promise<void> {
  const result = await deps.sender.send(request);
  const outcome = classify(result, Date.now());
  const ok = outcome.kind === "success";
  metrics.probes.inc({ outcome: ok ? "success" : "failure" });
  const applied = await withRetry(deps.db, async (q) => {
    const a = await applyProbe(q, {
      destinationId: dest.id,
      probeId,
      startedAt: new Date(nowMs),
      latencyMs: result.latencyMs,
      ok,
      statusCode: outcome.statusCode,
      errorClass: outcome.errorClass,
      healthClass: healthClass(outcome),
      errorMessage: result.errorMessage,
      responseBody: result.responseBody === "" ? null : result.responseBody,
    });
    if (a.resumed && a.destination) {
      await recordAlerts(q, [
        alertInput(
          a.destination,
          "destination.resumed",
          `a probe succeeded (${describeProbe(result.statusCode)}); delivery resumes, starting at concurrency 1`,
          { status: "healthy", score: 100, consecutive_failures: 0 },
        ),
      ]);
    }
    return a;
  });
  const ids = { tenant_id: dest.tenant_id, destination_id: dest.id };
  const answer = { status_code: outcome.statusCode, error_class: outcome.errorClass, latency_ms: Math.round(result.latencyMs) };
  if (applied.resumed) {
    deps.log.info(
      { ...ids, ...answer, by: "probe", ramp_limit: dest.max_concurrency > 1 ? 1 : null },
      "probe succeeded: destination resumed on a ramp",
    );
    deps.onAlerts?.();
    deps.wake();
  } else if (!ok && applied.nextProbeAt) {
    deps.log.info({ ...ids, ...answer, next_probe_at: applied.nextProbeAt.toISOString() }, "probe failed: destination stays paused");
    // The claim that sent the probe planned the next look after the probe's lease; the next
    // probe is due sooner than that, and an idle loop would sleep through it.
    deps.wake();
  } else {
    // Resumed or deleted meanwhile: the probe's answer changed nothing.
    deps.log.debug({ ...ids, ...answer }, "probe answered; the destination is no longer paused for a probe");
  }
}

function describeProbe(statusCode: number | null): string {
  return statusCode === null ? "no answer" : `HTTP ${statusCode}`;
}
