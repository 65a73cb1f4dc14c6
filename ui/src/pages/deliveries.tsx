import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { allDestinations, type Attempt, type Delivery, type Destination, type Event as SluiceEvent } from "../api.js";
import { useSession, type SessionContext } from "../context.js";
import { usePoll } from "../hooks.js";
import { DeliveryBadge } from "../components/badges.js";
import { Card, ChoiceFilter, CopyButton, ErrorNote, Fact, Loading } from "../components/common.js";
import { count, ms, time, until } from "../format.js";
import { href, navigate, useRoute } from "../router.js";
import { curlFor } from "../curl.js";

// Deliveries: the list (filtered by status, destination and event, the filters in the URL so a
// view can be linked), one delivery with its attempts, a retry and a copyable curl. The pieces
// the event page shares (attempts table, destination names, paging) live here too.

export const DELIVERY_STATUSES: Delivery["status"][] = [
  "queued",
  "held",
  "delivering",
  "retry_scheduled",
  "delivered",
  "dead",
  "discarded",
];
const RETRYABLE: Delivery["status"][] = ["dead", "discarded"];
const REFRESH_MS = 5000;
const PAGE_SIZE = 50;
const EXCERPT_CHARS = 300;

/** A time as text, the exact instant on hover and for machines. */
export function When({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <>—</>;
  return (
    <time dateTime={iso} title={iso}>
      {time(iso)}
    </time>
  );
}

// ---- destination names, fetched once per session and id ----

const destinationCache = new Map<string, Promise<Destination | null>>();
const cacheKey = (s: SessionContext, id: string) => `${s.creds.token}|${s.creds.tenantId ?? ""}|${id}`;

function lookupDestination(s: SessionContext, id: string): Promise<Destination | null> {
  const key = cacheKey(s, id);
  let p = destinationCache.get(key);
  if (!p) {
    // A destination deleted since (or out of a portal's reach) shows by its id.
    p = s.client.get("/v1/destinations/{id}", { params: { path: { id } } }).catch(() => null);
    destinationCache.set(key, p);
  }
  return p;
}

function primeDestinations(s: SessionContext, list: Destination[]): void {
  for (const d of list) destinationCache.set(cacheKey(s, d.id), Promise.resolve(d));
}

/** The destinations of these ids as they load (absent until loaded, null when not found). */
export function useDestinations(ids: string[]): Map<string, Destination | null> {
  const s = useSession();
  const [found, setFound] = useState(new Map<string, Destination | null>());
  const key = [...new Set(ids)].sort().join(",");
  useEffect(() => {
    let live = true;
    for (const id of key ? key.split(",") : []) {
      void lookupDestination(s, id).then((d) => {
        if (live) setFound((m) => (m.get(id) === d ? m : new Map(m).set(id, d)));
      });
    }
    return () => {
      live = false;
    };
  }, [key, s.creds]);
  return found;
}

export function DestinationLink({ id, destination }: { id: string; destination: Destination | null | undefined }) {
  return <a href={href(`/destinations/${id}`)}>{destination?.name || id}</a>;
}

// ---- paging ----

interface PageOf<T> {
  data: T[];
  next_cursor: string | null;
}

/** A list loaded page by page ("Load more"), started again whenever `deps` change. */
export function usePages<T>(load: (cursor: string | undefined) => Promise<PageOf<T>>, deps: unknown[]) {
  const [items, setItems] = useState<T[]>();
  const [next, setNext] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const seq = useRef(0);
  const fetchPage = (cursor: string | undefined) => {
    const mine = ++seq.current;
    setBusy(true);
    setError(null);
    load(cursor).then(
      (p) => {
        if (mine !== seq.current) return;
        setItems((old) => (cursor ? [...(old ?? []), ...p.data] : p.data));
        setNext(p.next_cursor);
        setBusy(false);
      },
      (e: unknown) => {
        if (mine !== seq.current) return;
        if (!cursor) setItems([]);
        setError(e);
        setBusy(false);
      },
    );
  };
  const reload = () => {
    setItems(undefined);
    setNext(null);
    fetchPage(undefined);
  };
  useEffect(reload, deps);
  return { items, next, busy, error, reload, more: () => next && fetchPage(next) };
}

export function LoadMore({ pages, what }: { pages: { next: string | null; busy: boolean; more: () => void }; what: string }) {
  if (!pages.next) return null;
  return (
    <p class="load-more">
      <button type="button" disabled={pages.busy} onClick={() => pages.more()}>
        {pages.busy ? `Loading more ${what}…` : "Load more"}
      </button>
    </p>
  );
}

// ---- attempts ----

function excerpt(a: Attempt): string {
  const text = a.response_body || a.error_message || "";
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

function resultOf(a: Attempt): string {
  if (a.status_code !== null) return `HTTP ${a.status_code}`;
  return a.error_class ?? a.class ?? "—";
}

export function AttemptsTable({ attempts, caption }: { attempts: Attempt[]; caption: string }) {
  if (attempts.length === 0) return <p class="muted">No attempt yet.</p>;
  return (
    // Focusable: a keyboard must be able to scroll a wide table.
    <div class="table-wrap" tabIndex={0}>
      <table class="attempts">
        <caption class="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col" class="num">
              #
            </th>
            <th scope="col">Time</th>
            <th scope="col">Outcome</th>
            <th scope="col">Status or error</th>
            <th scope="col" class="num">
              Latency
            </th>
            <th scope="col">Response</th>
          </tr>
        </thead>
        <tbody>
          {attempts.map((a) => (
            <tr key={`${a.started_at}-${a.attempt}`}>
              <td class="num">{a.attempt}</td>
              <td>
                <When iso={a.started_at} />
              </td>
              <td>
                <span class={`badge outcome-${a.outcome}`}>{a.outcome}</span>
              </td>
              <td class="mono">{resultOf(a)}</td>
              <td class="num">{ms(a.latency_ms)}</td>
              <td class="excerpt">{excerpt(a) || <span class="muted">—</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A delivery's attempts, reloaded when its attempt count moves. */
export function useAttempts(id: string, attemptsSoFar: number | undefined, enabled = true) {
  const s = useSession();
  return usePoll(
    async () => (enabled ? (await s.client.get("/v1/deliveries/{id}/attempts", { params: { path: { id } } })).data : undefined),
    0,
    [id, attemptsSoFar, enabled, s.creds],
  );
}

function lastResult(d: Delivery): string {
  if (d.last_status_code !== null) return `HTTP ${d.last_status_code}`;
  return d.last_error ?? "—";
}

// ---- the list ----

export function DeliveriesPage() {
  const s = useSession();
  const route = useRoute();
  const q = {
    status: route.query.get("status") ?? "",
    destination_id: route.query.get("destination_id") ?? "",
    event_id: route.query.get("event_id") ?? "",
  };
  const [eventId, setEventId] = useState(q.event_id);
  useEffect(() => setEventId(q.event_id), [q.event_id]);

  const destinations = usePoll(
    async () => {
      const all = await allDestinations(s.client);
      primeDestinations(s, all);
      return all;
    },
    0,
    [s.creds],
  );

  const key = `${q.status}|${q.destination_id}|${q.event_id}`;
  const pages = usePages(
    (cursor) =>
      s.client.get("/v1/deliveries", {
        params: {
          query: {
            limit: PAGE_SIZE,
            cursor,
            status: (q.status || undefined) as Delivery["status"] | undefined,
            destination_id: q.destination_id || undefined,
            event_id: q.event_id || undefined,
          },
        },
      }),
    [key, s.creds],
  );
  const names = useDestinations((pages.items ?? []).map((d) => d.destination_id));

  const apply = (next: Partial<typeof q>) => {
    const target = href("/deliveries", { ...q, ...next });
    if (location.hash === target) pages.reload();
    else navigate("/deliveries", { ...q, ...next });
  };
  const pick = (field: "status" | "destination_id") => (e: Event) => apply({ [field]: (e.target as HTMLSelectElement).value });

  return (
    <>
      <div class="page-head">
        <h1>Deliveries</h1>
        <p class="muted">One event to one destination, newest first.</p>
      </div>
      <form
        class="filters"
        role="search"
        aria-label="Filter deliveries"
        onSubmit={(e) => {
          e.preventDefault();
          apply({ event_id: eventId.trim() });
        }}
      >
        <ChoiceFilter label="Status" value={q.status} choices={DELIVERY_STATUSES} onChange={(v) => apply({ status: v })} />
        <label>
          <span>Destination</span>
          <select value={q.destination_id} onChange={pick("destination_id")}>
            <option value="">any</option>
            {q.destination_id && !destinations.data?.some((d) => d.id === q.destination_id) ? (
              <option value={q.destination_id}>{q.destination_id}</option>
            ) : null}
            {(destinations.data ?? []).map((d) => (
              <option key={d.id} value={d.id}>
                {d.name || d.id}
              </option>
            ))}
          </select>
        </label>
        <label>
          <span>Event ID</span>
          <input
            type="search"
            class="mono"
            placeholder="evt_…"
            value={eventId}
            onInput={(e) => setEventId((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" class="primary">
          Filter
        </button>
      </form>
      <ErrorNote error={pages.error ?? destinations.error} />
      {!pages.items ? (
        <Loading what="deliveries" />
      ) : (
        <>
          <div class="table-wrap">
            <table class="deliveries">
              <caption class="sr-only">{pages.items.length} deliveries</caption>
              <thead>
                <tr>
                  <th scope="col">Delivery</th>
                  <th scope="col">Created</th>
                  <th scope="col">Status</th>
                  <th scope="col">Destination</th>
                  <th scope="col">Event</th>
                  <th scope="col" class="num">
                    Attempts
                  </th>
                  <th scope="col">Last status or error</th>
                  <th scope="col">Next attempt</th>
                </tr>
              </thead>
              <tbody>
                {pages.items.map((d) => (
                  <tr key={d.id} data-delivery={d.id}>
                    <td class="mono">
                      <a href={href(`/deliveries/${d.id}`)}>{d.id}</a>
                    </td>
                    <td>
                      <When iso={d.created_at} />
                    </td>
                    <td>
                      <DeliveryBadge status={d.status} />
                      {d.hold_reason ? <div class="muted small">{d.hold_reason.replace("_", " ")}</div> : null}
                    </td>
                    <td>
                      <DestinationLink id={d.destination_id} destination={names.get(d.destination_id)} />
                    </td>
                    <td class="mono">
                      <a href={href(`/events/${d.event_id}`)}>{d.event_id}</a>
                    </td>
                    <td class="num">{count(d.attempts)}</td>
                    <td class="excerpt">{lastResult(d)}</td>
                    <td>{d.next_attempt_at ? <When iso={d.next_attempt_at} /> : "—"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {pages.items.length === 0 ? (
              <p class="muted empty">
                {pages.next ? "None on this page matches: load more to look further back." : "No delivery matches."}
              </p>
            ) : null}
          </div>
          <LoadMore pages={pages} what="deliveries" />
        </>
      )}
    </>
  );
}

// ---- one delivery ----

export function DeliveryPage({ id }: { id: string }) {
  const s = useSession();
  const delivery = usePoll(() => s.client.get("/v1/deliveries/{id}", { params: { path: { id } } }), REFRESH_MS, [id, s.creds]);
  const d = delivery.data;
  const attempts = useAttempts(id, d?.attempts, d !== undefined);
  const event = usePoll(async () => (d ? s.client.get("/v1/events/{id}", { params: { path: { id: d.event_id } } }) : undefined), 0, [
    d?.event_id,
    s.creds,
  ]);
  const destinations = useDestinations(d ? [d.destination_id] : []);
  const destination = d ? destinations.get(d.destination_id) : undefined;
  const retry = useRetry(id, () => delivery.reload());

  if (!d) return delivery.error ? <ErrorNote error={delivery.error} /> : <Loading what="the delivery" />;
  return (
    <>
      <div class="page-head">
        <h1>
          Delivery <span class="mono id">{d.id}</span>
        </h1>
        <DeliveryBadge status={d.status} />
        {s.canWrite && RETRYABLE.includes(d.status) ? (
          <div class="actions">
            <button type="button" class="primary" disabled={retry.busy} onClick={() => void retry.retry()}>
              {retry.busy ? "Retrying…" : "Retry"}
            </button>
          </div>
        ) : null}
      </div>
      <p role="status" class="retry-result">
        {retry.result}
      </p>
      <ErrorNote error={retry.error} />
      <ErrorNote error={delivery.error} />
      <Card title="Details" id="delivery-details">
        <dl class="facts record-facts">
          <Fact label="Status">
            <DeliveryBadge status={d.status} />
          </Fact>
          <Fact label="Destination">
            <DestinationLink id={d.destination_id} destination={destination} />
          </Fact>
          <Fact label="Event">
            <a class="mono" href={href(`/events/${d.event_id}`)}>
              {d.event_id}
            </a>
          </Fact>
          <Fact label="Attempts">{count(d.attempts)}</Fact>
          <Fact label="Hold reason">{d.hold_reason ? d.hold_reason.replace("_", " ") : "—"}</Fact>
          <Fact label="Next attempt">
            {d.next_attempt_at ? (
              <>
                <When iso={d.next_attempt_at} /> ({until(d.next_attempt_at)})
              </>
            ) : (
              "—"
            )}
          </Fact>
          <Fact label="Last status">{d.last_status_code ?? "—"}</Fact>
          <Fact label="Last error">{d.last_error ?? "—"}</Fact>
          <Fact label="Trace id">{d.trace_id ? <span class="mono">{d.trace_id}</span> : "—"}</Fact>
          <Fact label="Created">
            <When iso={d.created_at} />
          </Fact>
          <Fact label="Updated">
            <When iso={d.updated_at} />
          </Fact>
        </dl>
      </Card>
      <Card title="Attempts" id="delivery-attempts">
        <ErrorNote error={attempts.error} />
        {attempts.data ? <AttemptsTable attempts={attempts.data} caption={`Attempts of delivery ${d.id}`} /> : <Loading what="attempts" />}
      </Card>
      <RequestCard event={event.data} eventError={event.error} destination={destination} />
    </>
  );
}

/**
 * POST …/retry, its outcome kept by the page: the button goes once the delivery is queued again,
 * the message saying so stays.
 */
function useRetry(id: string, onDone: () => void) {
  const s = useSession();
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<string>();
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    setResult(undefined);
    setError(null);
  }, [id]);
  const retry = async () => {
    setBusy(true);
    setError(null);
    setResult(undefined);
    try {
      const d = await s.client.post("/v1/deliveries/{id}/retry", { params: { path: { id } } });
      setResult(`Queued again: the delivery is ${d.status.replace("_", " ")}.`);
      onDone();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { busy, result, error, retry };
}

/** The request Sluice sends for this delivery, as a curl without its secrets. */
function RequestCard({
  event,
  eventError,
  destination,
}: {
  event: SluiceEvent | undefined;
  eventError: unknown;
  destination: Destination | null | undefined;
}) {
  // The timestamp of the moment the page opened: a stable command, fresh enough to paste.
  const [now] = useState(() => Math.floor(Date.now() / 1000));
  const command = useMemo(
    () =>
      event && destination
        ? curlFor({
            url: destination.url,
            eventId: event.id,
            type: event.type,
            occurredAt: event.occurred_at,
            payload: event.payload,
            headers: destination.headers,
            secretHeaders: destination.secret_headers,
            timestampSeconds: now,
          })
        : null,
    [event, destination, now],
  );
  return (
    <Card title="Request" id="delivery-request" actions={command ? <CopyButton text={command} label="Copy curl" /> : null}>
      <ErrorNote error={eventError} />
      {destination === null ? (
        <p class="muted">The destination is gone, so its request cannot be shown.</p>
      ) : command ? (
        <>
          <p class="muted">
            What Sluice sends, as curl. Secret header values and URL credentials are placeholders, and the signature must be made with your
            signing secret.
          </p>
          <pre class="curl" tabIndex={0}>
            {command}
          </pre>
        </>
      ) : eventError ? null : (
        <Loading what="the request" />
      )}
    </Card>
  );
}
