import { useEffect, useState } from "preact/hooks";
import type { Attempt } from "../api.js";
import { useSession } from "../context.js";
import { usePoll } from "../hooks.js";
import { ms, time } from "../format.js";
import { href } from "../router.js";
import { Card, ErrorNote, Loading } from "./common.js";

// The attempt timeline: the newest page is polled; "Load older" pages back with next_before.
// Once older pages are on screen, rows that newer attempts push off the polled page are kept,
// so the list stays continuous while it grows at the top.

const PAGE = 100;
const EXCERPT_CHARS = 160;
const MAX_KEPT = 5000;

interface Page {
  data: Attempt[];
  next_before: string | null;
}

const keyOf = (a: Attempt) => `${a.kind}:${a.delivery_id ?? ""}:${a.attempt}:${a.started_at}`;

function merge(...lists: Attempt[][]): Attempt[] {
  const seen = new Map<string, Attempt>();
  for (const list of lists) for (const a of list) seen.set(keyOf(a), a);
  return [...seen.values()].sort((a, b) => Date.parse(b.started_at) - Date.parse(a.started_at)).slice(0, MAX_KEPT);
}

function excerpt(a: Attempt): string {
  const text = (a.response_body ?? a.error_message ?? "").replace(/\s+/g, " ").trim();
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

export function AttemptsCard({ id, everyMs }: { id: string; everyMs: number }) {
  const s = useSession();
  const head = usePoll(
    () => s.client.get("/v1/destinations/{id}/attempts", { params: { path: { id }, query: { limit: PAGE } } }) as Promise<Page>,
    everyMs,
    [s.creds, id],
  );
  const [kept, setKept] = useState<Attempt[] | null>(null);
  const [before, setBefore] = useState<string | null | undefined>(undefined);
  const [loading, setLoading] = useState(false);
  const [olderError, setOlderError] = useState<unknown>(null);

  useEffect(() => {
    setKept(null);
    setBefore(undefined);
  }, [id]);
  useEffect(() => {
    if (kept && head.data) setKept(merge(head.data.data, kept));
  }, [head.data]);

  const rows = kept ?? head.data?.data ?? [];
  const cursor = before === undefined ? head.data?.next_before : before;

  const loadOlder = async () => {
    if (!cursor) return;
    setLoading(true);
    setOlderError(null);
    try {
      const page: Page = await s.client.get("/v1/destinations/{id}/attempts", {
        params: { path: { id }, query: { limit: PAGE, before: cursor } },
      });
      setKept(merge(head.data?.data ?? [], kept ?? [], page.data));
      setBefore(page.next_before);
    } catch (e) {
      setOlderError(e);
    } finally {
      setLoading(false);
    }
  };

  return (
    <Card title="Attempts" id="card-attempts">
      <ErrorNote error={head.error} />
      {!head.data ? (
        <Loading what="attempts" />
      ) : rows.length === 0 ? (
        <p class="muted">No attempts yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="attempts">
            <caption class="sr-only">Attempts, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Kind</th>
                <th scope="col" class="num">
                  Attempt
                </th>
                <th scope="col">Outcome</th>
                <th scope="col">Status</th>
                <th scope="col" class="num">
                  Latency
                </th>
                <th scope="col">Response</th>
                <th scope="col">Delivery</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((a) => (
                <tr key={keyOf(a)} data-outcome={a.outcome}>
                  <td class="nowrap">
                    <time dateTime={a.started_at}>{time(a.started_at)}</time>
                  </td>
                  <td>{a.kind}</td>
                  <td class="num">{a.kind === "probe" ? "—" : a.attempt}</td>
                  <td>
                    <span class={`badge outcome-${a.outcome}`}>{a.outcome === "throttled" ? "throttled" : a.outcome}</span>
                  </td>
                  <td class="mono">{a.status_code ?? a.error_class ?? a.class ?? "—"}</td>
                  <td class="num">{ms(a.latency_ms)}</td>
                  <td class="excerpt" title={a.response_body ?? a.error_message ?? undefined}>
                    {excerpt(a)}
                  </td>
                  <td class="mono">{a.delivery_id ? <a href={href(`/deliveries/${a.delivery_id}`)}>{a.delivery_id}</a> : "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ErrorNote error={olderError} />
      {cursor ? (
        <p>
          <button type="button" onClick={() => void loadOlder()} disabled={loading}>
            {loading ? "Loading…" : "Load older"}
          </button>
        </p>
      ) : head.data && rows.length > 0 ? (
        <p class="muted">That is every attempt kept.</p>
      ) : null}
    </Card>
  );
}
