import { useEffect, useState } from "preact/hooks";
import type { Delivery, Destination } from "../api.js";
import { useSession } from "../context.js";
import { usePoll } from "../hooks.js";
import { DeliveryBadge } from "../components/badges.js";
import { Card, ErrorNote, Fact, Loading } from "../components/common.js";
import { count, until as inTime } from "../format.js";
import { href, navigate, useRoute } from "../router.js";
import { AttemptsTable, DestinationLink, LoadMore, When, useAttempts, useDestinations, usePages } from "./deliveries.js";

// Events: a search by type (order.* for a prefix) and time, its filters in the URL so a search
// can be linked; and one event with its payload and, per destination, its delivery and attempts.

const PAGE_SIZE = 50;
const REFRESH_MS = 5000;

/** An ISO instant as a datetime-local value (the browser's zone, to the minute). */
function toLocalInput(iso: string | null): string {
  if (!iso) return "";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  const d = new Date(t);
  return new Date(t - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/** A datetime-local value (the browser's zone) as an ISO instant; "" when empty or invalid. */
function fromLocalInput(v: string): string {
  if (!v) return "";
  const t = new Date(v).getTime();
  return Number.isNaN(t) ? "" : new Date(t).toISOString();
}

export function EventsPage() {
  const s = useSession();
  const route = useRoute();
  const q = { type: route.query.get("type") ?? "", since: route.query.get("since") ?? "", until: route.query.get("until") ?? "" };
  const [type, setType] = useState(q.type);
  const [from, setFrom] = useState(toLocalInput(q.since));
  const [to, setTo] = useState(toLocalInput(q.until));
  // The URL is the truth: a link or the back button sets the fields.
  useEffect(() => {
    setType(q.type);
    setFrom(toLocalInput(q.since));
    setTo(toLocalInput(q.until));
  }, [q.type, q.since, q.until]);

  const pages = usePages(
    (cursor) =>
      s.client.get("/v1/events", {
        params: {
          query: { limit: PAGE_SIZE, cursor, type: q.type || undefined, since: q.since || undefined, until: q.until || undefined },
        },
      }),
    [q.type, q.since, q.until, s.creds],
  );

  const search = (e: Event) => {
    e.preventDefault();
    const next = { type: type.trim(), since: fromLocalInput(from), until: fromLocalInput(to) };
    if (location.hash === href("/events", next)) pages.reload();
    else navigate("/events", next);
  };

  return (
    <>
      <div class="page-head">
        <h1>Events</h1>
        <p class="muted">Newest first. A type ending in * matches a prefix (order.*).</p>
      </div>
      <form class="filters record-filters" role="search" aria-label="Search events" onSubmit={search}>
        <label>
          <span>Event type</span>
          <input type="search" placeholder="order.*" value={type} onInput={(e) => setType((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          <span>From</span>
          <input type="datetime-local" value={from} onInput={(e) => setFrom((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          <span>To</span>
          <input type="datetime-local" value={to} onInput={(e) => setTo((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="primary">
          Search
        </button>
      </form>
      <ErrorNote error={pages.error} />
      {!pages.items ? (
        <Loading what="events" />
      ) : (
        <>
          <div class="table-wrap">
            <table class="events">
              <caption class="sr-only">{pages.items.length} events</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Type</th>
                  <th scope="col">Event</th>
                </tr>
              </thead>
              <tbody>
                {pages.items.map((ev) => (
                  <tr key={ev.id} data-event={ev.id}>
                    <td>
                      <When iso={ev.occurred_at} />
                    </td>
                    <td class="mono">{ev.type}</td>
                    <td class="mono">
                      <a href={href(`/events/${ev.id}`)}>{ev.id}</a>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {pages.items.length === 0 ? <p class="muted empty">No event matches.</p> : null}
          </div>
          <LoadMore pages={pages} what="events" />
        </>
      )}
    </>
  );
}

export function EventPage({ id }: { id: string }) {
  const s = useSession();
  const event = usePoll(() => s.client.get("/v1/events/{id}", { params: { path: { id } } }), REFRESH_MS, [id, s.creds]);
  const ev = event.data;
  const deliveries = ev?.deliveries ?? [];
  const destinations = useDestinations(deliveries.map((d) => d.destination_id));

  if (!ev) return event.error ? <ErrorNote error={event.error} /> : <Loading what="the event" />;
  return (
    <>
      <div class="page-head">
        <h1>
          Event <span class="mono id">{ev.id}</span>
        </h1>
      </div>
      <ErrorNote error={event.error} />
      <Card title="Payload" id="event-payload">
        <dl class="facts record-facts">
          <Fact label="Type">
            <span class="mono">{ev.type}</span>
          </Fact>
          <Fact label="Occurred">
            <When iso={ev.occurred_at} />
          </Fact>
          <Fact label="Published">
            <When iso={ev.created_at} />
          </Fact>
          {ev.deliver_at ? (
            <Fact label="Not before">
              <When iso={ev.deliver_at} />
            </Fact>
          ) : null}
        </dl>
        <pre class="payload" tabIndex={0}>
          {JSON.stringify(ev.payload, null, 2)}
        </pre>
      </Card>
      <h2 class="section-title">Deliveries ({deliveries.length})</h2>
      {deliveries.length === 0 ? <p class="muted">No destination took this event.</p> : null}
      {deliveries.map((d) => (
        <EventDelivery key={d.id} delivery={d} destination={destinations.get(d.destination_id)} />
      ))}
    </>
  );
}

/** One destination's delivery of the event; its attempts load when opened. */
function EventDelivery({ delivery: d, destination }: { delivery: Delivery; destination: Destination | null | undefined }) {
  const [open, setOpen] = useState(false);
  const attempts = useAttempts(d.id, d.attempts, open);
  const headingId = `dlv-${d.id}`;
  return (
    <section class="card event-delivery" aria-labelledby={headingId} data-delivery={d.id}>
      <header class="card-head">
        <h3 id={headingId}>
          <DestinationLink id={d.destination_id} destination={destination} />
        </h3>
        <DeliveryBadge status={d.status} />
        <div class="card-actions">
          <a href={href(`/deliveries/${d.id}`)}>
            Delivery <span class="mono">{d.id}</span>
          </a>
        </div>
      </header>
      <dl class="facts record-facts">
        <Fact label="Hold reason">{d.hold_reason ? d.hold_reason.replace("_", " ") : "—"}</Fact>
        <Fact label="Attempts">{count(d.attempts)}</Fact>
        <Fact label="Last status or error">{d.last_status_code !== null ? `HTTP ${d.last_status_code}` : (d.last_error ?? "—")}</Fact>
        <Fact label="Next attempt">{d.next_attempt_at ? inTime(d.next_attempt_at) : "—"}</Fact>
      </dl>
      <details onToggle={(e) => setOpen(e.currentTarget.open)}>
        <summary>Attempts ({d.attempts})</summary>
        <ErrorNote error={attempts.error} />
        {attempts.data ? (
          <AttemptsTable attempts={attempts.data} caption={`Attempts to ${destination?.name || d.destination_id}`} />
        ) : open ? (
          <Loading what="attempts" />
        ) : null}
      </details>
    </section>
  );
}
