import type { Destination, DestinationStats } from "../api.js";
import { HeldTable } from "./held.js";
import { useNow } from "../hooks.js";
import { count, duration, time } from "../format.js";
import { HealthBadge, StatusBadge } from "./badges.js";
import { StackedBars } from "./charts.js";
import { Card, Fact } from "./common.js";

// The destination page's state cards: each reads the destination (live state) and, where it
// needs numbers the destination does not carry, its stats (null while those are unavailable).

type Stats = DestinationStats | null;

/** Time left until `iso`, ticking every second on its own (the page around it does not re-render). */
export function Countdown({ to }: { to: string }) {
  const now = useNow(1000);
  const left = Date.parse(to) - now;
  return <span class="countdown">{left > 0 ? duration(left) : "now"}</span>;
}

function StatsUnavailable() {
  return <p class="muted">Stats unavailable.</p>;
}

const isFuture = (iso: string | null | undefined) => !!iso && Date.parse(iso) > Date.now();

function describeRate(d: Destination): string {
  const r = d.rate_limit;
  if (!r) return "no rate limit";
  const parts = [];
  if (r.max_per_second !== undefined) parts.push(`${r.max_per_second}/s`);
  if (r.max_per_minute !== undefined) parts.push(`${r.max_per_minute}/min`);
  if (r.burst_capacity !== undefined) parts.push(`burst ${r.burst_capacity}`);
  return parts.join(", ");
}

export function ThrottleCard({ d }: { d: Destination }) {
  const throttled = d.status === "throttled" || isFuture(d.throttled_until);
  return (
    <Card title="Throttle" id="card-throttle">
      {throttled ? (
        <p class="state-line">
          <strong>Throttled</strong>
          {d.throttled_until ? (
            <>
              {" "}
              for <Countdown to={d.throttled_until} /> <span class="muted">(until {time(d.throttled_until)})</span>
            </>
          ) : null}
        </p>
      ) : (
        <p class="state-line">Not throttled</p>
      )}
      {throttled ? (
        <p>
          <span class="muted">Reason:</span> {d.throttle_reason ?? "not given"}
        </p>
      ) : null}
      {throttled ? (
        <p class="muted">The receiver asked Sluice to wait (a 429 answer). Nothing is sent until then, and no retry is spent.</p>
      ) : null}
      {d.status === "rate_limited" ? (
        <p class="notice">
          <strong>Rate limited:</strong> more deliveries are waiting than the rate limit ({describeRate(d)}) lets go now; they leave as its
          tokens refill, oldest first.
        </p>
      ) : null}
    </Card>
  );
}

const DAY_LABELS: Record<string, string> = { mon: "Mon", tue: "Tue", wed: "Wed", thu: "Thu", fri: "Fri", sat: "Sat", sun: "Sun" };

/** A weekday and time of an instant in a zone (the browser's when none is given); Intl does the zone work. */
export function zoned(iso: string, timeZone?: string): string {
  try {
    return new Intl.DateTimeFormat(undefined, {
      weekday: "short",
      hour: "2-digit",
      minute: "2-digit",
      hour12: false,
      timeZone,
    }).format(new Date(iso));
  } catch {
    return new Date(iso).toISOString();
  }
}

export function QuietHoursCard({ d }: { d: Destination }) {
  const q = d.delivery_schedule;
  const localZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return (
    <Card title="Quiet hours" id="card-quiet">
      {!q ? (
        <p class="state-line">No quiet hours: deliveries go at any time.</p>
      ) : (
        <>
          <p class="state-line">
            {d.quiet_until ? (
              <>
                <strong>
                  quiet until {zoned(d.quiet_until, q.timezone)} ({q.timezone})
                </strong>{" "}
                — {zoned(d.quiet_until)} your time
              </>
            ) : d.next_quiet_at ? (
              <>
                next quiet window {zoned(d.next_quiet_at, q.timezone)} ({q.timezone}) / {zoned(d.next_quiet_at)} your time
              </>
            ) : (
              "No quiet window ahead."
            )}
          </p>
          <dl class="facts">
            <Fact label="Window">
              {q.quiet_start.slice(0, 5)}–{q.quiet_end.slice(0, 5)}
            </Fact>
            <Fact label="Time zone">{q.timezone}</Fact>
            <Fact label="Days">{q.days?.length && q.days.length < 7 ? q.days.map((x) => DAY_LABELS[x] ?? x).join(", ") : "every day"}</Fact>
            <Fact label="Applies to">{q.applies_to?.length ? q.applies_to.join(", ") : "all event types"}</Fact>
            <Fact label="Bypass">{q.bypass_event_types?.length ? q.bypass_event_types.join(", ") : "none"}</Fact>
            <Fact label="Your time zone">{localZone}</Fact>
          </dl>
        </>
      )}
    </Card>
  );
}

/** A bar for a level; hidden from screen readers, which read the numbers beside it. */
function Meter({ value, max }: { value: number; max: number }) {
  const pct = max > 0 ? Math.min(100, Math.max(0, (value / max) * 100)) : 0;
  return (
    <div class="meter" aria-hidden="true">
      <span style={{ width: `${pct.toFixed(1)}%` }} />
    </div>
  );
}

function Bucket({ label, bucket }: { label: string; bucket: { capacity: number; tokens: number } | null | undefined }) {
  return (
    <Fact label={label}>
      {bucket ? (
        <>
          {bucket.tokens.toFixed(bucket.tokens < 10 ? 1 : 0)} of {count(bucket.capacity)}
          <Meter value={bucket.tokens} max={bucket.capacity} />
        </>
      ) : (
        "—"
      )}
    </Fact>
  );
}

/** A rate as people read it: at most two decimals. */
const perSecond = (n: number) => `${Math.round(n * 100) / 100}/s`;

export function RateLimitCard({ d, stats }: { d: Destination; stats: Stats }) {
  const r = d.rate_limit;
  const adaptive = d.adaptive?.enabled === true;
  const maxInFlight = d.ordered ? 1 : d.effective_concurrency;
  return (
    <Card title="Rate limit" id="card-rate">
      <dl class="facts">
        <Fact label="Per second">{r?.max_per_second ?? "not set"}</Fact>
        <Fact label="Per minute">{r?.max_per_minute ?? "not set"}</Fact>
        <Fact label="Burst">{r?.burst_capacity ?? (r ? "default" : "not set")}</Fact>
        {adaptive ? (
          <Fact label="Adaptive pace">
            {d.effective_rate_per_second === null ? "unlimited" : perSecond(d.effective_rate_per_second)}, {d.effective_concurrency} at once
            <span class="muted">
              {" "}
              (between {perSecond(d.adaptive?.min_per_second ?? 1)} and {perSecond(d.adaptive?.max_per_second ?? 1000)})
            </span>
          </Fact>
        ) : null}
        {r?.max_per_second !== undefined || adaptive ? <Bucket label="Tokens now (second)" bucket={stats?.buckets.second} /> : null}
        {r?.max_per_minute !== undefined ? <Bucket label="Tokens now (minute)" bucket={stats?.buckets.minute} /> : null}
        <Fact label="In flight">
          {d.inflight} of {d.ordered ? 1 : d.effective_concurrency}
          {d.ramp_limit !== null && !d.ordered ? <span class="muted"> (ramp {d.ramp_limit})</span> : null}
          {adaptive && !d.ordered && d.effective_concurrency < d.max_concurrency ? (
            <span class="muted"> (adaptive; max {d.max_concurrency})</span>
          ) : null}
          <Meter value={d.inflight} max={maxInFlight} />
        </Fact>
        <Fact label="Ordered">{d.ordered ? "yes (one at a time)" : "no"}</Fact>
      </dl>
      {adaptive && d.pace_reason ? (
        <p id="pace-reason">
          <span class="muted">Pace:</span> {d.pace_reason}
          {d.pace_changed_at ? <span class="muted"> ({time(d.pace_changed_at)})</span> : null}
        </p>
      ) : null}
      {d.backlog_alerts.length > 0 ? (
        <p class="notice" id="backlog-alerts">
          <strong>Backlog {d.backlog_alerts.join(" and ")}:</strong>{" "}
          {d.backlog_alerts.includes("stale")
            ? "the oldest waiting delivery is older than the holds explain."
            : "the waiting deliveries have kept rising."}{" "}
          See what holds them below.
        </p>
      ) : null}
      {(r || adaptive) && !stats ? <StatsUnavailable /> : null}
    </Card>
  );
}

export function HealthCard({ d }: { d: Destination }) {
  return (
    <Card title="Health and probes" id="card-health">
      <dl class="facts">
        <Fact label="Health">
          <HealthBadge status={d.health.status} />
        </Fact>
        <Fact label="Score">{Math.round(d.health.score)} of 100</Fact>
        <Fact label="Failures in a row">{d.health.consecutive_failures}</Fact>
      </dl>
      {d.status === "paused" ? (
        <div class="paused-note">
          <p>
            <strong>Paused: {d.pause_reason ?? "no reason given"}</strong>
            {d.paused_at ? <span class="muted"> (since {time(d.paused_at)})</span> : null}
          </p>
          {d.next_probe_at ? (
            <p>
              Next probe in <Countdown to={d.next_probe_at} />{" "}
              <span class="muted">
                (at {time(d.next_probe_at)}; every {duration(d.probe_interval_seconds * 1000)})
              </span>
            </p>
          ) : (
            <p class="muted">Not probed: it stays paused until someone resumes it.</p>
          )}
        </div>
      ) : null}
      {d.ramp_limit !== null ? (
        <p>
          Recovering: up to <strong>{d.ramp_limit}</strong> in flight now, rising to {d.ordered ? 1 : d.max_concurrency}.
        </p>
      ) : null}
    </Card>
  );
}

export function HeldCard({ d, stats }: { d: Destination; stats: Stats }) {
  const now = Date.now();
  return (
    <Card title="Held deliveries" id="card-held">
      <dl class="facts">
        <Fact label="Not yet delivered">{count(d.queued_events)}</Fact>
        <Fact label="Oldest waiting">{stats?.oldest_waiting_at ? duration(now - Date.parse(stats.oldest_waiting_at)) : "—"}</Fact>
      </dl>
      {!stats ? (
        <StatsUnavailable />
      ) : stats.held.length === 0 ? (
        <p class="muted">Nothing is held back.</p>
      ) : (
        <HeldTable groups={stats.held} caption="Held deliveries by reason" />
      )}
    </Card>
  );
}

export function OutcomesCard({ stats }: { stats: Stats }) {
  return (
    <Card title="Attempts per minute" id="card-outcomes">
      {!stats ? (
        <StatsUnavailable />
      ) : (
        <StackedBars
          title="Attempts per minute by outcome: delivered, failed, rate limited (429)"
          at={stats.outcomes.map((o) => o.at)}
          series={[
            { label: "delivered", color: "var(--chart-ok)", values: stats.outcomes.map((o) => o.delivered) },
            { label: "failed", color: "var(--chart-bad)", values: stats.outcomes.map((o) => o.failed) },
            { label: "rate limited (429)", color: "var(--chart-warn)", values: stats.outcomes.map((o) => o.rate_limited) },
          ]}
        />
      )}
    </Card>
  );
}

export function ArrivalsCard({ d, stats }: { d: Destination; stats: Stats }) {
  const perSecond = d.rate_limit?.max_per_second;
  const values = stats?.arrivals.map((a) => a.n) ?? [];
  const peak = Math.max(0, ...values);
  const total = values.reduce((a, b) => a + b, 0);
  return (
    <Card title="Arrivals per second" id="card-arrivals">
      {!stats ? (
        <StatsUnavailable />
      ) : (
        <>
          <StackedBars
            title={`Requests started per second over the last ${Math.round(values.length / 60)} minutes${perSecond ? `, against the limit of ${perSecond} per second` : ""}`}
            at={stats.arrivals.map((a) => a.at)}
            series={[{ label: "requests started", color: "var(--chart-info)", values }]}
            limit={perSecond ? { value: perSecond, label: `limit ${perSecond}/s` } : null}
          />
          <p class="muted">
            Peak {count(peak)}/s, average {(total / Math.max(1, values.length)).toFixed(1)}/s
            {perSecond
              ? `; limit ${perSecond}/s${d.rate_limit?.burst_capacity ? ` with bursts up to ${d.rate_limit.burst_capacity}` : ""}`
              : ""}
            .
          </p>
        </>
      )}
    </Card>
  );
}

/** The title line's badges. */
export function DestinationBadges({ d }: { d: Destination }) {
  return (
    <span class="badges">
      <StatusBadge status={d.status} /> <HealthBadge status={d.health.status} score={d.health.score} />
    </span>
  );
}
