import { useEffect, useRef, useState } from "preact/hooks";
import type { components } from "../../../sdk/src/index.js";
import type { Destination } from "../api.js";
import { useSession } from "../context.js";
import { count, time } from "../format.js";
import { Card, Confirm, CopyButton, ErrorNote } from "./common.js";

// The destination page's actions: pause, resume (replay or discard), recover a time range,
// rotate the secret. Each asks first in a dialog; only the open one is rendered (the shared
// dialog heading id must stay unique on the page).

type Recovery = components["schemas"]["Recovery"];
type Dialog = "pause" | "resume" | "recover" | "rotate" | null;

const RECOVERABLE = ["dead", "discarded", "delivered"] as const;
const DEFAULT_RECOVER: readonly string[] = ["dead", "discarded"];

/** A Date as a datetime-local value (its local wall time; the browser does the zone work). */
function localInput(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** A datetime-local value as an ISO instant in UTC; what cannot be read is passed on for the API to refuse. */
function toIso(v: string): string | undefined {
  if (!v) return undefined;
  const t = new Date(v);
  return Number.isNaN(t.getTime()) ? v : t.toISOString();
}

export interface ActionResults {
  notice: (text: string) => void;
  secret: (secret: string) => void;
  recovery: (id: string) => void;
}

export function DestinationActions({
  d,
  editing,
  onEdit,
  onChanged,
  results,
}: {
  d: Destination;
  editing: boolean;
  onEdit: () => void;
  onChanged: () => void;
  results: ActionResults;
}) {
  const s = useSession();
  const [open, setOpen] = useState<Dialog>(null);
  const [reason, setReason] = useState("");
  const [replay, setReplay] = useState(true);
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const [statuses, setStatuses] = useState<string[]>([...DEFAULT_RECOVER]);
  const name = d.name || d.id;
  const path = { params: { path: { id: d.id } } };
  const opener = useRef<HTMLElement | null>(null);
  // The dialog is removed rather than closed, so focus goes back to its button by hand.
  const close = () => {
    setOpen(null);
    const back = opener.current;
    setTimeout(() => {
      if (back?.isConnected) back.focus();
    }, 0);
  };

  const show = (which: Exclude<Dialog, null>) => {
    opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    setReason("");
    setReplay(true);
    setFrom(localInput(new Date(Date.now() - 24 * 3600_000)));
    setTo("");
    setStatuses([...DEFAULT_RECOVER]);
    setOpen(which);
  };

  const pause = async () => {
    await s.client.post("/v1/destinations/{id}/pause", { ...path, body: reason.trim() ? { reason: reason.trim() } : {} });
    results.notice(`Paused ${name}.`);
    onChanged();
  };
  const resume = async () => {
    const after = await s.client.post("/v1/destinations/{id}/resume", { ...path, body: { replay } });
    results.notice(
      replay
        ? `Resumed ${name}: its held deliveries go out in order.`
        : `Resumed ${name}: ${count(after.discarded ?? 0)} held deliveries were discarded (each can still be retried by id).`,
    );
    onChanged();
  };
  const recover = async () => {
    const body = { since: toIso(from), until: toIso(to), statuses } as never;
    const accepted = await s.client.post("/v1/destinations/{id}/recover", { ...path, body });
    results.recovery(accepted.id);
    onChanged();
  };
  const rotate = async () => {
    const secret = await s.client.post("/v1/destinations/{id}/rotate-secret", { ...path, body: {} });
    results.secret(secret.secret);
  };

  return (
    <>
      <div class="actions">
        {d.status === "paused" ? (
          <button type="button" class="primary" onClick={() => show("resume")}>
            Resume
          </button>
        ) : (
          <button type="button" onClick={() => show("pause")}>
            Pause
          </button>
        )}
        <button type="button" onClick={() => show("recover")}>
          Recover
        </button>
        <button type="button" onClick={() => show("rotate")}>
          Rotate secret
        </button>
        <button type="button" aria-expanded={editing} aria-controls="destination-settings" onClick={onEdit}>
          Edit settings
        </button>
      </div>

      {open === "pause" ? (
        <Confirm open title={`Pause ${name}`} confirmLabel="Pause" onConfirm={pause} onClose={close}>
          <p>Every delivery to it is held until it is resumed; nothing is lost.</p>
          <label>
            <span>Reason</span>
            <input type="text" maxLength={500} value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
          </label>
        </Confirm>
      ) : null}

      {open === "resume" ? (
        <Confirm open title={`Resume ${name}`} confirmLabel="Resume" onConfirm={resume} onClose={close}>
          <p>{d.queued_events === 1 ? "1 delivery is held." : `${d.queued_events} deliveries are held.`}</p>
          <fieldset>
            <legend>What happens to them</legend>
            <label class="check">
              <input type="radio" name="resume-mode" checked={replay} onChange={() => setReplay(true)} />
              <span>Replay them in order</span>
            </label>
            <label class="check">
              <input type="radio" name="resume-mode" checked={!replay} onChange={() => setReplay(false)} />
              <span>Discard them</span>
            </label>
          </fieldset>
        </Confirm>
      ) : null}

      {open === "recover" ? (
        <Confirm open title={`Recover deliveries to ${name}`} confirmLabel="Recover" onConfirm={recover} onClose={close}>
          <p>Queues this destination's finished deliveries again, for events that occurred in the range.</p>
          <div class="form-grid">
            <label>
              <span>From</span>
              <input type="datetime-local" value={from} onInput={(e) => setFrom((e.target as HTMLInputElement).value)} />
            </label>
            <div class="field">
              <label for="recover-to">To</label>
              <input
                id="recover-to"
                type="datetime-local"
                aria-describedby="recover-to-hint"
                value={to}
                onInput={(e) => setTo((e.target as HTMLInputElement).value)}
              />
              <span class="hint" id="recover-to-hint">
                empty = now
              </span>
            </div>
          </div>
          <fieldset>
            <legend>Deliveries that are</legend>
            {RECOVERABLE.map((st) => (
              <label class="check" key={st}>
                <input
                  type="checkbox"
                  checked={statuses.includes(st)}
                  onChange={(e) =>
                    setStatuses((e.target as HTMLInputElement).checked ? [...statuses, st] : statuses.filter((x) => x !== st))
                  }
                />
                <span>{st}</span>
              </label>
            ))}
          </fieldset>
        </Confirm>
      ) : null}

      {open === "rotate" ? (
        <Confirm open title={`Rotate the signing secret of ${name}`} confirmLabel="Rotate secret" onConfirm={rotate} onClose={close}>
          <p>
            A new secret signs every delivery from now on. The current one keeps signing beside it for 24 hours, so the receiver can switch
            without refusing anything.
          </p>
        </Confirm>
      ) : null}
    </>
  );
}

/** The new secret, shown once: it is not shown again after this is closed. */
export function NewSecret({ secret, onDone }: { secret: string; onDone: () => void }) {
  return (
    <Card title="New signing secret" id="card-secret">
      <p>Give it to the receiver now. The previous secret keeps signing beside it for 24 hours.</p>
      <p>
        <code class="secret">{secret}</code>
      </p>
      <div class="card-actions-row">
        <CopyButton text={secret} label="Copy secret" />
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </Card>
  );
}

/** A recovery's progress, followed every second until it is done. */
export function RecoveryProgress({ destinationId, id, onDone }: { destinationId: string; id: string; onDone: () => void }) {
  const s = useSession();
  const [r, setR] = useState<Recovery>();
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let stop = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const next = await s.client.get("/v1/destinations/{id}/recoveries/{rid}", { params: { path: { id: destinationId, rid: id } } });
        if (stop) return;
        setR(next);
        setError(null);
        if (next.status === "done") return;
      } catch (e) {
        if (stop) return;
        setError(e);
      }
      timer = setTimeout(() => void tick(), 1000);
    };
    void tick();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [destinationId, id]);

  return (
    <Card title="Recovery" id="card-recovery">
      <ErrorNote error={error} />
      {r ? (
        <>
          <p role="status">
            {r.status === "done" ? "Done" : "Running"}: {count(r.requeued)} of {count(r.deliveries)} deliveries queued again
          </p>
          <progress max={Math.max(1, r.deliveries)} value={r.requeued} aria-label="Recovery progress" />
          <p class="muted">
            {r.statuses.join(", ")} deliveries of events from {time(r.since)} to {time(r.until)}
            {r.finished_at ? `; finished ${time(r.finished_at)}` : ""}.
          </p>
        </>
      ) : (
        <p class="muted">Starting recovery {id}…</p>
      )}
      <button type="button" onClick={onDone}>
        {r?.status === "done" ? "Close" : "Hide"}
      </button>
    </Card>
  );
}
