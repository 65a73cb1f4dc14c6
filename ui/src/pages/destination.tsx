import { useEffect, useState } from "preact/hooks";
import type { Destination } from "../api.js";
import { useSession } from "../context.js";
import { usePoll } from "../hooks.js";
import { href } from "../router.js";
import { ErrorNote, Loading } from "../components/common.js";
import { ConfigForm } from "../components/config-form.js";
import { AttemptsCard } from "../components/destination-attempts.js";
import { DestinationActions, NewSecret, RecoveryProgress } from "../components/destination-actions.js";
import {
  ArrivalsCard,
  DestinationBadges,
  HealthCard,
  HeldCard,
  OutcomesCard,
  QuietHoursCard,
  RateLimitCard,
  ThrottleCard,
} from "../components/destination-cards.js";

const REFRESH_MS = 3000;
const STATS_QUERY = { minutes: 180, rate_seconds: 300 };

/** One destination: its flow-control state as it happens, its attempts, and what can be done to it. */
export function DestinationPage({ id }: { id: string }) {
  const s = useSession();
  const dest = usePoll<Destination>(() => s.client.get("/v1/destinations/{id}", { params: { path: { id } } }), REFRESH_MS, [s.creds, id]);
  // Best effort: without stats the page still shows the destination's own state.
  const stats = usePoll(() => s.client.get("/v1/destinations/{id}/stats", { params: { path: { id }, query: STATS_QUERY } }), REFRESH_MS, [
    s.creds,
    id,
  ]);
  const [editing, setEditing] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [recovery, setRecovery] = useState<string | null>(null);

  useEffect(() => {
    setEditing(false);
    setNotice(null);
    setSecret(null);
    setRecovery(null);
  }, [id]);

  const d = dest.data;
  if (!d) {
    return (
      <>
        <p>
          <a href={href("/")}>← Destinations</a>
        </p>
        {dest.error ? (
          <>
            <h1>Destination {id}</h1>
            <ErrorNote error={dest.error} />
          </>
        ) : (
          <Loading what="the destination" />
        )}
      </>
    );
  }
  const st = stats.data ?? null;
  const reload = () => {
    dest.reload();
    stats.reload();
  };

  return (
    <div class="destination-page">
      <p class="crumbs">
        <a href={href("/")}>← Destinations</a>
      </p>
      <div class="page-head">
        <h1>{d.name || d.id}</h1>
        <DestinationBadges d={d} />
        {s.canWrite ? (
          <DestinationActions
            d={d}
            editing={editing}
            onEdit={() => setEditing(!editing)}
            onChanged={reload}
            results={{ notice: setNotice, secret: setSecret, recovery: setRecovery }}
          />
        ) : null}
      </div>
      <dl class="ident">
        <div>
          <dt>URL</dt>
          <dd class="mono">{d.url}</dd>
        </div>
        <div>
          <dt>ID</dt>
          <dd class="mono">{d.id}</dd>
        </div>
      </dl>
      {/* A refresh that fails keeps the last answer on screen and says so. */}
      <ErrorNote error={dest.error} />
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      {stats.error && !st ? (
        <p class="muted">Stats unavailable: the charts, token buckets and held reasons need the stats endpoint.</p>
      ) : null}

      {secret ? <NewSecret secret={secret} onDone={() => setSecret(null)} /> : null}
      {recovery ? <RecoveryProgress destinationId={d.id} id={recovery} onDone={() => setRecovery(null)} /> : null}
      {editing && s.canWrite ? (
        <div id="destination-settings">
          <ConfigForm key={d.id} destination={d} onSaved={reload} />
        </div>
      ) : null}

      <div class="grid">
        <ThrottleCard d={d} />
        <QuietHoursCard d={d} />
        <RateLimitCard d={d} stats={st} />
        <HealthCard d={d} />
        <HeldCard d={d} stats={st} />
      </div>
      <div class="grid charts-grid">
        <OutcomesCard stats={st} />
        <ArrivalsCard d={d} stats={st} />
      </div>
      <AttemptsCard id={d.id} everyMs={REFRESH_MS} />
    </div>
  );
}
