import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { allDestinations, DESTINATION_STATUSES, type Destination } from "../api.js";
import { useSession } from "../context.js";
import { usePoll, useNow } from "../hooks.js";
import { StatusBadge, HealthBadge } from "../components/badges.js";
import { Countdown } from "../components/destination-cards.js";
import { ChoiceFilter, ErrorNote, Loading } from "../components/common.js";
import { count, duration } from "../format.js";
import { href } from "../router.js";

const REFRESH_MS = 3000;

/** Under a held destination's status: when it is tried again, so "why late" reads off the list. */
function NextTry({ d }: { d: Destination }) {
  let text: ComponentChildren = null;
  if (d.status === "throttled" && d.throttled_until)
    text = (
      <>
        tried again in <Countdown to={d.throttled_until} />
      </>
    );
  else if (d.status === "paused")
    text = d.next_probe_at ? (
      <>
        next probe in <Countdown to={d.next_probe_at} />
      </>
    ) : (
      "until resumed"
    );
  else if (d.status === "quiet" && d.quiet_until)
    text = (
      <>
        opens in <Countdown to={d.quiet_until} />
      </>
    );
  else if (d.status === "rate_limited" && d.effective_rate_per_second !== null) text = `at ${d.effective_rate_per_second}/s`;
  return text === null ? null : <div class="muted next-try">{text}</div>;
}

/**
 * The age of the oldest delivery waiting. A backlog never reads "—": its deliveries are waiting
 * (an age), all in flight (the held counts leave those out), or the stats are not in yet.
 */
function oldestWaiting(d: Destination, oldestAt: string | null | undefined, statsIn: boolean, now: number): string {
  if (oldestAt) return duration(now - Date.parse(oldestAt));
  if (d.queued_events === 0) return "—";
  if (!statsIn) return "…";
  return d.inflight > 0 ? "in flight" : "just queued";
}

/** Every destination with its live state, refreshed every few seconds in place. */
export function DestinationsPage() {
  const s = useSession();
  const now = useNow();
  const [status, setStatus] = useState("");
  const [search, setSearch] = useState("");
  const list = usePoll(() => allDestinations(s.client), REFRESH_MS, [s.creds]);
  // The last hour's counts and oldest waiting ages: best effort, the table stands without them.
  const stats = usePoll(() => s.client.get("/v1/stats", { params: { query: { minutes: 60 } } }), REFRESH_MS * 2, [s.creds]);
  const byId = new Map((stats.data?.destinations ?? []).map((d) => [d.id, d]));

  const needle = search.trim().toLowerCase();
  const shown = (list.data ?? []).filter(
    (d) => (!status || d.status === status) && (!needle || d.name.toLowerCase().includes(needle) || d.url.toLowerCase().includes(needle)),
  );

  return (
    <>
      <div class="page-head">
        <h1>Destinations</h1>
        <p class="muted">Live: refreshed every {REFRESH_MS / 1000} seconds.</p>
      </div>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <ChoiceFilter label="Status" value={status} choices={DESTINATION_STATUSES} onChange={setStatus} />
        <label>
          <span>Search name or URL</span>
          <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        </label>
      </form>
      <ErrorNote error={list.error} />
      {!list.data ? (
        <Loading what="destinations" />
      ) : (
        <div class="table-wrap">
          <table class="destinations">
            <caption class="sr-only">
              {shown.length} of {list.data.length} destinations
            </caption>
            <thead>
              <tr>
                <th scope="col">Destination</th>
                <th scope="col">Status</th>
                <th scope="col">Health</th>
                <th scope="col">Backlog</th>
                <th scope="col">Oldest waiting</th>
                <th scope="col">In flight</th>
                <th scope="col">Delivered 1 h</th>
                <th scope="col">Failed 1 h</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((d) => {
                const st = byId.get(d.id);
                return (
                  <tr key={d.id} data-destination={d.id}>
                    <td data-label="Destination">
                      <a href={href(`/destinations/${d.id}`)}>{d.name || d.id}</a>
                      <div class="muted url">{d.url}</div>
                    </td>
                    <td data-label="Status">
                      <StatusBadge status={d.status} />
                      <NextTry d={d} />
                    </td>
                    <td data-label="Health">
                      <HealthBadge status={d.health.status} score={d.health.score} />
                    </td>
                    <td data-label="Backlog" class="num">
                      {count(d.queued_events)}
                    </td>
                    <td data-label="Oldest waiting" class="num">
                      {oldestWaiting(d, st?.oldest_waiting_at, !!stats.data, now)}
                    </td>
                    <td data-label="In flight" class="num">
                      {d.inflight} / {d.ordered ? 1 : d.max_concurrency}
                    </td>
                    <td data-label="Delivered 1 h" class="num">
                      {count(st?.delivered_last_hour)}
                    </td>
                    <td data-label="Failed 1 h" class="num">
                      {count(st?.failed_last_hour)}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          {shown.length === 0 ? <p class="muted">No destination matches.</p> : null}
        </div>
      )}
    </>
  );
}
