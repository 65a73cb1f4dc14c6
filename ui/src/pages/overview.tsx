import type { HeldGroup, Stats } from "../api.js";
import { HOLD_COLORS, HOLD_LABELS, HeldTable } from "../components/held.js";
import { useSession } from "../context.js";
import { usePoll } from "../hooks.js";
import { Card, ErrorNote, Fact, Loading } from "../components/common.js";
import { Lines, StackedBars } from "../components/charts.js";
import { count, ms } from "../format.js";
import { SluiceApiError } from "../session.js";

// The last hour at a glance, from GET /v1/stats (minute rollups plus a live tail; docs/api.md
// "Stats"): throughput, failures, publish→delivery latency and what holds the backlog back.

const REFRESH_MS = 5000;
const MINUTES = 60;

/** The newest minute that delivered anything: "now" for a percentile. */
function latestP95(stats: Stats): number | null {
  for (let i = stats.series.length - 1; i >= 0; i--) {
    const p = stats.series[i]!.latency_p95_ms;
    if (p !== null) return p;
  }
  return null;
}

/** Backlog samples as one line per reason over the series' minutes (a minute without a sample of a reason: none held). */
function backlogSeries(stats: Stats, at: string[]) {
  const index = new Map(at.map((t, i) => [Date.parse(t), i]));
  const byReason = new Map<HeldGroup["reason"], number[]>();
  for (const b of stats.backlog) {
    const i = index.get(Date.parse(b.at));
    if (i === undefined) continue;
    let values = byReason.get(b.reason);
    if (!values) byReason.set(b.reason, (values = at.map(() => 0)));
    values[i] = b.n;
  }
  return [...byReason].map(([reason, values]) => ({ label: HOLD_LABELS[reason], color: HOLD_COLORS[reason], values }));
}

export function OverviewPage() {
  const s = useSession();
  const stats = usePoll(() => s.client.get("/v1/stats", { params: { query: { minutes: MINUTES } } }), REFRESH_MS, [s.creds]);
  const missing = stats.error instanceof SluiceApiError && stats.error.status === 404;

  return (
    <>
      <div class="page-head">
        <h1>Overview</h1>
        <p class="muted">The last hour, per minute. Live: refreshed every {REFRESH_MS / 1000} seconds.</p>
      </div>
      {missing ? (
        <p class="muted">This Sluice does not serve statistics (GET /v1/stats answered 404), so there is nothing to chart.</p>
      ) : (
        <>
          <ErrorNote error={stats.error} />
          {stats.data ? <Charts stats={stats.data} /> : stats.error ? null : <Loading what="statistics" />}
        </>
      )}
    </>
  );
}

function Charts({ stats }: { stats: Stats }) {
  const at = stats.series.map((p) => p.at);
  const delivered = stats.series.reduce((n, p) => n + p.delivered, 0);
  const failed = stats.series.reduce((n, p) => n + p.failed, 0);
  const limited = stats.series.reduce((n, p) => n + p.rate_limited, 0);
  const heldNow = stats.held_now.reduce((n, h) => n + h.n, 0);
  const p95 = latestP95(stats);
  const perSecond = stats.bucket_seconds || 60;
  const backlog = backlogSeries(stats, at);

  return (
    <>
      <section class="card" aria-label="Summary">
        <dl class="facts overview-facts">
          <Fact label="Delivered last hour">{count(delivered)}</Fact>
          <Fact label="Failed last hour">
            {count(failed)}
            {limited ? <span class="muted small"> and {count(limited)} answered 429</span> : null}
          </Fact>
          <Fact label="p95 latency now">{ms(p95)}</Fact>
          <Fact label="Held now">{count(heldNow)}</Fact>
        </dl>
      </section>
      <div class="grid overview-grid">
        <Card title="Deliveries per second" id="chart-throughput">
          <StackedBars
            at={at}
            title={`Deliveries per second, each minute of the last hour; ${count(delivered)} delivered in all`}
            unit="/s"
            series={[
              {
                label: "delivered per second (minute average)",
                color: "var(--chart-ok)",
                values: stats.series.map((p) => Math.round((p.delivered / perSecond) * 100) / 100),
              },
            ]}
          />
        </Card>
        <Card title="Failures" id="chart-failures">
          <StackedBars
            at={at}
            title={`Failed and rate-limited attempts per minute; ${count(failed)} failed and ${count(limited)} answered 429 in the last hour`}
            series={[
              { label: "failed", color: "var(--chart-bad)", values: stats.series.map((p) => p.failed) },
              { label: "rate limited (429)", color: "var(--chart-warn)", values: stats.series.map((p) => p.rate_limited) },
            ]}
          />
        </Card>
        <Card title="Publish to delivery latency" id="chart-latency">
          <Lines
            at={at}
            unit="ms"
            title={`Publish to delivery latency per minute, 50th, 95th and 99th percentiles; p95 now ${ms(p95)}`}
            series={[
              { label: "p50", color: "var(--chart-ok)", values: stats.series.map((p) => p.latency_p50_ms) },
              { label: "p95", color: "var(--chart-warn)", values: stats.series.map((p) => p.latency_p95_ms) },
              { label: "p99", color: "var(--chart-bad)", values: stats.series.map((p) => p.latency_p99_ms) },
            ]}
          />
        </Card>
        <Card title="Backlog by hold reason" id="chart-backlog">
          {backlog.length ? (
            <Lines at={at} title="Held deliveries by hold reason, sampled each minute of the last hour" series={backlog} />
          ) : (
            <p class="muted">Nothing was held back in the last hour.</p>
          )}
          <HeldNow stats={stats} />
        </Card>
      </div>
    </>
  );
}

function HeldNow({ stats }: { stats: Stats }) {
  if (stats.held_now.length === 0) return <p class="muted">Nothing is held now.</p>;
  return <HeldTable groups={stats.held_now} caption="Held now" visibleCaption />;
}
