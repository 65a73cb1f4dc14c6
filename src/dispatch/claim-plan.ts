import type { AfterClaimUpdate, ClaimedDestination, Grant } from "../db/queries/claim.js";
import { currentQuietWindow, type QuietWindow } from "../policy/quiet-hours.js";
import { slotsFree, nextReadyAt, type GateInput } from "../policy/gates.js";
import { effectiveLimits } from "../policy/adaptive-pace.js";
import { grantBuckets, available, spend, nextTokenAtMs, statesOf, storeStates, type Bucket } from "../policy/token-bucket.js";
import { storedDestinationProblem } from "../policy/stored-config.js";
import type { SetAsideCode } from "../db/queries/set-aside.js";

// The claim's decisions, pure: from the locked destination rows (each carrying its own `now`,
// the database clock) and the options to the grants and probes, then — once the leases are
// known — to each destination's next ready_at, token buckets and hold flags. claim() applies them.
//
// Each destination is planned on its own: one whose stored row is outside what the API admits,
// or whose planning throws, is set aside (claim() pauses it) and the others are planned as if it
// were not there. One bad row must never fail the claim every worker shares.

export type HoldTransition =
  | { kind: "rate_limited"; destination: ClaimedDestination; holding: boolean }
  /** Holding: `until` the open window's end. Released: the window that held them, when known. */
  | { kind: "quiet_hours"; destination: ClaimedDestination; holding: boolean; until: Date | null; window?: QuietWindow };

export interface PlanOptions {
  /** Most deliveries this claim may lease in total (the worker's free send capacity). */
  capacity: number;
  grantCap: number;
  leaseMarginSeconds: number;
  /** See grantBuckets: burst tokens held back for send-time jitter. */
  rateSendJitterMs: number;
}

/** A destination the claim does not plan: claim() pauses it with this code and detail. */
export interface SetAside {
  destination: ClaimedDestination;
  code: SetAsideCode;
  detail: string;
  /** What was thrown (internal_error), for the log. */
  error?: unknown;
}

export interface GrantPlan {
  grants: Grant[];
  /** Destinations not planned (their stored row is invalid, or planning threw): not in any other field. */
  setAside: SetAside[];
  /** Paused destinations (transient cause) whose probe is due: send each one probe. */
  probes: ClaimedDestination[];
  /** What planAfterClaim needs from this phase, per unpaused destination id. */
  buckets: Map<string, Bucket[]>;
  /** Free slots and whole tokens each rate-limited destination had at this claim. */
  shaped: Map<string, { slots: number; tokens: number }>;
  /** The quiet window open now, for destinations inside one. */
  quiet: Map<string, QuietWindow>;
}

export interface AfterClaimPlan {
  updates: AfterClaimUpdate[];
  /** Destinations whose after-claim planning threw: no update, set aside instead. */
  setAside: SetAside[];
  /** Hold flags this claim changes, in the order of `locked`. */
  transitions: HoldTransition[];
  /** Destinations that were at their concurrency cap with due work waiting. */
  slotDenied: number;
  /** Some destination is ready again at once (more due work and room to send it). */
  readyAgain: boolean;
}

/** How soon a claim that found its destination going quiet looks once more (see planAfterClaim). */
export const IDLE_RECHECK_MS = 1000;

/** Grants and probes for the locked destinations, in their order, within the worker's capacity. */
export function planGrants(locked: ClaimedDestination[], opts: PlanOptions): GrantPlan {
  let budget = opts.capacity;
  const plan: GrantPlan = { grants: [], setAside: [], probes: [], buckets: new Map(), shaped: new Map(), quiet: new Map() };
  for (const d of locked) {
    // A destination paused by a person or for good is not planned with; any other is checked first.
    const planned = !d.paused_at || probeDue(d);
    const problem = planned ? storedDestinationProblem(d) : null;
    if (problem !== null) {
      plan.setAside.push({ destination: d, code: "invalid_config", detail: problem });
      continue;
    }
    if (d.paused_at) {
      // A paused destination gets no deliveries; one paused for a transient cause gets a probe.
      if (probeDue(d) && budget > 0) {
        budget--;
        plan.probes.push(d);
      }
      continue;
    }
    let one: DestinationGrant;
    try {
      one = planOne(d, opts);
    } catch (error) {
      plan.setAside.push({ destination: d, code: "internal_error", detail: faultDetail("planning its claim", error), error });
      continue;
    }
    if (one.quiet) plan.quiet.set(d.id, one.quiet);
    plan.buckets.set(d.id, one.buckets);
    if (one.buckets.length) plan.shaped.set(d.id, { slots: one.slots, tokens: one.tokens });
    const n = Math.min(one.tokens, budget);
    if (n <= 0) continue;
    budget -= n;
    plan.grants.push({
      destinationId: d.id,
      count: n,
      ordered: d.ordered,
      leaseSeconds: d.timeout_seconds + opts.leaseMarginSeconds,
      quiet: one.quiet !== null,
    });
  }
  return plan;
}

interface DestinationGrant {
  quiet: QuietWindow | null;
  buckets: Bucket[];
  slots: number;
  /** Whole tokens, at most `slots` (= slots when unlimited). */
  tokens: number;
}

/** What one unpaused destination may be granted now, before the worker's budget is shared out. */
function planOne(d: ClaimedDestination, opts: PlanOptions): DestinationGrant {
  const nowMs = d.now.getTime();
  const quiet = d.delivery_schedule ? currentQuietWindow(d.delivery_schedule, nowMs) : null;
  // Adaptive pace, when on, sets the rate the buckets refill at (and the concurrency: gateInput).
  const buckets = grantBuckets(effectiveLimits(d, nowMs).rateLimit, opts.rateSendJitterMs);
  const slots = Math.min(slotsFree(gateInput(d, d.inflight)), opts.grantCap);
  // Tokens are spent in this transaction, so the limit holds across every worker process.
  const tokens = buckets.length ? available(buckets, statesOf(buckets, d.bucket_state), nowMs, slots) : slots;
  if (!Number.isSafeInteger(tokens) || tokens < 0 || tokens > slots) {
    throw new RangeError(`grant of ${tokens} from ${slots} free slots is not a count`);
  }
  return { quiet, buckets, slots, tokens };
}

/** "planning its claim failed: RangeError: …" — short, for a pause_reason. */
export function faultDetail(doing: string, error: unknown): string {
  const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return `${doing} failed (${what.slice(0, 200)})`;
}

/** Deliveries leased per destination id. */
export function leasedPerDestination(leased: { destination_id: string }[]): Map<string, number> {
  const granted = new Map<string, number>();
  for (const l of leased) granted.set(l.destination_id, (granted.get(l.destination_id) ?? 0) + 1);
  return granted;
}

/**
 * Each locked destination's next ready_at, token buckets and hold flags, given what the grants
 * leased (`granted`: count per destination id) and which unordered destinations still have due
 * work beyond their grant (`moreDue`).
 */
export function planAfterClaim(
  locked: ClaimedDestination[],
  granted: Map<string, number>,
  moreDue: Set<string>,
  plan: GrantPlan,
  opts: PlanOptions,
): AfterClaimPlan {
  const result: AfterClaimPlan = { updates: [], setAside: [], transitions: [], slotDenied: 0, readyAgain: false };
  const hadGrant = new Set(plan.grants.map((g) => g.destinationId));
  const probed = new Set(plan.probes.map((d) => d.id));
  const updateOf = (d: ClaimedDestination): AfterClaimUpdate => {
    if (d.paused_at) {
      // Woken for its probe (or by a late result): next look is the next probe, if it gets probes.
      const nextProbeMs = probed.has(d.id)
        ? d.now.getTime() + Math.max(d.probe_interval_seconds, d.timeout_seconds + opts.leaseMarginSeconds) * 1000
        : d.pause_cause === "transient"
          ? Math.max(d.next_probe_at?.getTime() ?? 0, d.now.getTime())
          : null;
      const at = nextProbeMs === null ? null : new Date(nextProbeMs);
      // Its quiet-hours finding stands until a claim looks again (a pause holds everything anyway).
      noteTransitions(result.transitions, d, false, d.quiet_holding);
      return {
        id: d.id,
        readyAt: at,
        bucketState: d.bucket_state,
        rateLimited: false,
        quietHolding: d.quiet_holding,
        nextProbeAt: probed.has(d.id) ? at : null,
        idleRecheck: false,
      };
    }
    const n = granted.get(d.id) ?? 0;
    const b = plan.buckets.get(d.id)!;
    const spent = b.length ? spend(b, statesOf(b, d.bucket_state), d.now.getTime(), n) : [];
    const input = gateInput(d, d.inflight + n);
    const nowMs = d.now.getTime();
    const leaseExpiry = n > 0 ? nowMs + (d.timeout_seconds + opts.leaseMarginSeconds) * 1000 : null;
    const nextLeaseExpiryMs = minOrNull(d.next_lease_expiry?.getTime() ?? null, leaseExpiry);
    let nextWaitingMs = d.next_waiting?.getTime() ?? null;
    if (d.ordered) {
      // The head decides; a leased head means nothing else may go until it finishes.
      if (n > 0) nextWaitingMs = null;
    } else if (moreDue.has(d.id) || !hadGrant.has(d.id)) {
      // Due work beyond the grant — or no grant at all (cap full, throttled, worker budget
      // spent), so we did not look: assume due work, and let the policy pick the time.
      nextWaitingMs = nowMs;
    }
    // At its cap (ramp included) with nothing granted; a throttled destination has no slots either, but is not "denied".
    if (!hadGrant.has(d.id) && slotsFree(gateInput(d, d.inflight)) === 0 && !(d.throttled_until && d.throttled_until > d.now))
      result.slotDenied++;
    // Quiet hours hold what their types cover until the window ends; bypass types went above.
    const win = plan.quiet.get(d.id);
    let quietHolding = false;
    if (win) {
      const heldHead = d.ordered ? d.head_quiet_hold === true && n === 0 : d.has_waiting === true;
      quietHolding = heldHead;
      if (heldHead) {
        nextWaitingMs = d.ordered ? Math.max(nextWaitingMs ?? nowMs, win.endMs) : Math.min(nextWaitingMs ?? win.endMs, win.endMs);
      }
    }
    const nextTokenMs = b.length ? nextTokenAtMs(b, spent, nowMs) : null;
    const rateLimited = rateLimitFinding(d, plan.shaped.get(d.id), n, hadGrant.has(d.id), nextWaitingMs);
    let at = nextReadyAt({ ...input, nextWaitingMs, nextLeaseExpiryMs, nextTokenMs });
    // A publish that commits while we hold this row added deliveries we cannot see, and it saw
    // the row as ready already, so it left ready_at to us: pushing ready_at past the next
    // second (or to "idle") could strand them. Look once more a second later instead; a
    // re-check that finds nothing new settles. Only the re-check itself may settle: a
    // write-back or publish that makes the row ready clears the flag.
    let idleRecheck = false;
    if ((at === null || at > nowMs + IDLE_RECHECK_MS) && !(d.idle_recheck && n === 0)) {
      at = at === null ? nowMs + IDLE_RECHECK_MS : Math.min(at, nowMs + IDLE_RECHECK_MS);
      idleRecheck = true;
    }
    noteTransitions(result.transitions, d, rateLimited, quietHolding, win ?? null);
    return {
      id: d.id,
      readyAt: at === null ? null : new Date(at),
      bucketState: storeStates(b, spent) ?? d.bucket_state,
      rateLimited,
      quietHolding,
      nextProbeAt: null,
      idleRecheck,
    };
  };
  for (const d of locked) {
    const transitions = result.transitions.length;
    try {
      const u = updateOf(d);
      if (u.readyAt !== null && !Number.isFinite(u.readyAt.getTime())) throw new RangeError("its next ready_at is not an instant");
      result.updates.push(u);
      if (u.readyAt !== null && u.readyAt.getTime() <= d.now.getTime()) result.readyAgain = true;
    } catch (error) {
      result.transitions.length = transitions; // a transition noted before the throw never happens
      result.setAside.push({ destination: d, code: "internal_error", detail: faultDetail("planning its next ready time", error), error });
    }
  }
  return result;
}

function minOrNull(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}

/**
 * Held by shaping: the buckets cut the grant (fewer whole tokens than free slots) and due work is
 * left behind. A claim that cannot tell keeps the last finding, so the flag (a status, and a log
 * line when it changes) does not flap while a backlog drains at the rate: an unordered
 * destination given no grant (no token, no slot) was not looked at, so whether due work waits is
 * unknown; an ordered head just leased leaves what follows it unread; a grant that took every
 * token and every slot does not say which of the two held the rest back.
 */
function rateLimitFinding(
  d: ClaimedDestination,
  shaped: { slots: number; tokens: number } | undefined,
  granted: number,
  hadGrant: boolean,
  nextWaitingMs: number | null,
): boolean {
  if (!shaped) return false;
  if (d.ordered ? granted > 0 : !hadGrant) return d.rate_limited;
  const dueLeft = nextWaitingMs !== null && nextWaitingMs <= d.now.getTime();
  if (!dueLeft) return false;
  // The buckets cut the grant: fewer whole tokens than free slots.
  if (shaped.tokens < shaped.slots) return true;
  const undecided = shaped.slots === 0 || (granted > 0 && granted === shaped.tokens);
  return undecided ? d.rate_limited : false;
}

/**
 * Records the hold flags this claim changes; the row lock makes it the only claim that sees the
 * change (ingest sets quiet_holding too, when it parks deliveries in an open window). `open`: the
 * quiet window open now.
 */
function noteTransitions(
  transitions: HoldTransition[],
  d: ClaimedDestination,
  rateLimited: boolean,
  quietHolding: boolean,
  open: QuietWindow | null = null,
): void {
  if (rateLimited !== d.rate_limited) transitions.push({ kind: "rate_limited", destination: d, holding: rateLimited });
  if (quietHolding === d.quiet_holding) return;
  if (quietHolding) {
    transitions.push({ kind: "quiet_hours", destination: d, holding: true, until: open ? new Date(open.endMs) : null });
    return;
  }
  const ended = endedWindow(d);
  transitions.push({ kind: "quiet_hours", destination: d, holding: false, until: null, ...(ended ? { window: ended } : {}) });
}

/**
 * On a release: the quiet window whose end woke this claim, for the log line (a held destination
 * sleeps until its window's end exactly, so ready_at names it); null if it was released otherwise.
 */
function endedWindow(d: ClaimedDestination): QuietWindow | null {
  if (!d.delivery_schedule || !d.ready_at) return null;
  const endMs = d.ready_at.getTime();
  const w = currentQuietWindow(d.delivery_schedule, endMs - 1);
  return w && w.endMs === endMs ? w : null;
}

function probeDue(d: ClaimedDestination): boolean {
  return d.pause_cause === "transient" && (d.next_probe_at === null || d.next_probe_at <= d.now);
}

function gateInput(d: ClaimedDestination, inflight: number): GateInput {
  return {
    nowMs: d.now.getTime(),
    // After a probe brought it back, the ramp caps concurrency until it reaches the configured cap;
    // adaptive pace sets its own, never above max_concurrency.
    maxConcurrency: effectiveLimits(d, d.now.getTime()).maxConcurrency,
    ordered: d.ordered,
    inflight,
    throttledUntilMs: d.throttled_until?.getTime() ?? null,
    paused: d.paused_at !== null,
  };
}
