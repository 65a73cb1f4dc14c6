import type { ComponentChildren } from "preact";
import { useMemo, useState } from "preact/hooks";
import type { Destination } from "../api.js";
import { useSession } from "../context.js";
import { SluiceApiError } from "../session.js";
import { errorText } from "./common.js";

// Edits every config field of a destination and PATCHes only what changed. It does not validate:
// what it sends is what was typed, so the messages shown are the API's own (each put beside its
// input by the field path the API names).

const DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
const DAY_LABELS: Record<(typeof DAYS)[number], string> = {
  mon: "Mon",
  tue: "Tue",
  wed: "Wed",
  thu: "Thu",
  fri: "Fri",
  sat: "Sat",
  sun: "Sun",
};

interface FormState {
  name: string;
  url: string;
  event_types: string;
  timeout_seconds: string;
  max_concurrency: string;
  ordered: boolean;
  per_second: string;
  per_minute: string;
  burst: string;
  adaptive: boolean;
  adaptive_min: string;
  adaptive_max: string;
  adaptive_target: string;
  quiet: boolean;
  timezone: string;
  quiet_start: string;
  quiet_end: string;
  days: string[];
  applies_to: string;
  bypass: string;
  retry: string;
  throttle: string;
  probe_interval: string;
  replay_on_resume: boolean;
  paused_retention: string;
  headers: string;
  secret_headers: string;
}

const str = (n: number | undefined | null) => (n === undefined || n === null ? "" : String(n));
const list = (xs: readonly (string | number)[] | undefined) => (xs ?? []).join(", ");

function fromDestination(d: Destination): FormState {
  const q = d.delivery_schedule;
  return {
    name: d.name,
    url: d.url,
    event_types: list(d.event_types),
    timeout_seconds: str(d.timeout_seconds),
    max_concurrency: str(d.max_concurrency),
    ordered: d.ordered,
    per_second: str(d.rate_limit?.max_per_second),
    per_minute: str(d.rate_limit?.max_per_minute),
    burst: str(d.rate_limit?.burst_capacity),
    adaptive: d.adaptive?.enabled === true,
    adaptive_min: str(d.adaptive?.min_per_second),
    adaptive_max: str(d.adaptive?.max_per_second),
    adaptive_target: str(d.adaptive?.target_latency_ms),
    quiet: q !== null,
    timezone: q?.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
    quiet_start: q?.quiet_start ?? "22:00",
    quiet_end: q?.quiet_end ?? "07:00",
    days: q?.days?.length ? [...q.days] : [...DAYS],
    applies_to: list(q?.applies_to),
    bypass: list(q?.bypass_event_types),
    retry: list(d.retry_schedule_seconds),
    throttle: list(d.throttle_schedule_seconds),
    probe_interval: str(d.probe_interval_seconds),
    replay_on_resume: d.replay_on_resume,
    paused_retention: str(d.paused_retention_hours),
    headers: Object.entries(d.headers ?? {})
      .map(([k, v]) => `${k}: ${v}`)
      .join("\n"),
    secret_headers: list(d.secret_headers),
  };
}

/** A number when it reads as one; otherwise what was typed, so the API says what is wrong with it. */
function num(s: string): unknown {
  const t = s.trim();
  if (t === "") return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : t;
}
const words = (s: string) => s.split(/[\s,]+/).filter(Boolean);
const nums = (s: string) => words(s).map(num);

interface Problem {
  field: string;
  message: string;
}

function parseHeaders(text: string, problems: Problem[]): Record<string, string> {
  const out: Record<string, string> = {};
  text.split("\n").forEach((line, i) => {
    if (!line.trim()) return;
    const colon = line.indexOf(":");
    if (colon <= 0) {
      problems.push({ field: "headers", message: `line ${i + 1} is not "Name: value"` });
      return;
    }
    out[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  });
  return out;
}

/** The config the form says, field by field, as the API takes it. */
function toConfig(f: FormState, problems: Problem[] = []): Record<string, unknown> {
  const rate: Record<string, unknown> = {};
  if (f.per_second.trim()) rate.max_per_second = num(f.per_second);
  if (f.per_minute.trim()) rate.max_per_minute = num(f.per_minute);
  if (f.burst.trim()) rate.burst_capacity = num(f.burst);
  // Off is null (the API forgets the pace); on, only the bounds that were typed (the rest default).
  let adaptive: Record<string, unknown> | null = null;
  if (f.adaptive) {
    adaptive = { enabled: true };
    if (f.adaptive_min.trim()) adaptive.min_per_second = num(f.adaptive_min);
    if (f.adaptive_max.trim()) adaptive.max_per_second = num(f.adaptive_max);
    if (f.adaptive_target.trim()) adaptive.target_latency_ms = num(f.adaptive_target);
  }
  let schedule: Record<string, unknown> | null = null;
  if (f.quiet) {
    schedule = { timezone: f.timezone.trim(), quiet_start: f.quiet_start, quiet_end: f.quiet_end };
    // All seven is the default; none is sent as [] for the API to refuse.
    if (f.days.length < DAYS.length) schedule.days = DAYS.filter((x) => f.days.includes(x));
    if (words(f.applies_to).length) schedule.applies_to = words(f.applies_to);
    if (words(f.bypass).length) schedule.bypass_event_types = words(f.bypass);
  }
  return {
    name: f.name,
    url: f.url.trim(),
    event_types: words(f.event_types),
    timeout_seconds: num(f.timeout_seconds),
    max_concurrency: num(f.max_concurrency),
    ordered: f.ordered,
    rate_limit: Object.keys(rate).length ? rate : null,
    adaptive,
    delivery_schedule: schedule,
    retry_schedule_seconds: nums(f.retry),
    throttle_schedule_seconds: nums(f.throttle),
    probe_interval_seconds: num(f.probe_interval),
    replay_on_resume: f.replay_on_resume,
    paused_retention_hours: num(f.paused_retention),
    headers: parseHeaders(f.headers, problems),
    secret_headers: words(f.secret_headers),
  };
}

/** Only the fields whose value differs from what the untouched form would send. */
export function changedFields(initial: FormState, now: FormState, problems: Problem[] = []): Record<string, unknown> {
  const before = toConfig(initial);
  const after = toConfig(now, problems);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(after)) if (JSON.stringify(v) !== JSON.stringify(before[k])) out[k] = v;
  return out;
}

// Where each API field path is shown; a path not here goes to its nearest known parent, or the top.
const FIELD_KEYS = new Set([
  "name",
  "url",
  "event_types",
  "timeout_seconds",
  "max_concurrency",
  "ordered",
  "rate_limit",
  "rate_limit.max_per_second",
  "rate_limit.max_per_minute",
  "rate_limit.burst_capacity",
  "adaptive",
  "adaptive.min_per_second",
  "adaptive.max_per_second",
  "adaptive.target_latency_ms",
  "delivery_schedule",
  "delivery_schedule.timezone",
  "delivery_schedule.quiet_start",
  "delivery_schedule.quiet_end",
  "delivery_schedule.days",
  "delivery_schedule.applies_to",
  "delivery_schedule.bypass_event_types",
  "retry_schedule_seconds",
  "throttle_schedule_seconds",
  "probe_interval_seconds",
  "replay_on_resume",
  "paused_retention_hours",
  "headers",
  "secret_headers",
]);

export function fieldKey(path: string): string | null {
  if (path === "headers" || path.startsWith("headers.")) return "headers"; // header names may hold dots
  let f = path.replace(/\[\d+\]/g, "");
  for (;;) {
    if (FIELD_KEYS.has(f)) return f;
    const dot = f.lastIndexOf(".");
    if (dot < 0) return null;
    f = f.slice(0, dot);
  }
}

type Errors = Map<string, string[]>;

const errId = (k: string) => `err-${k.replace(/[^a-z0-9]+/gi, "-")}`;

function FieldErrors({ k, errors }: { k: string; errors: Errors }) {
  const msgs = errors.get(k);
  if (!msgs?.length) return null;
  return (
    <span class="field-error" id={errId(k)}>
      {msgs.join("; ")}
    </span>
  );
}

const inputId = (k: string) => `cfg-${k.replace(/[^a-z0-9]+/gi, "-")}`;
const hintId = (k: string) => `hint-${k.replace(/[^a-z0-9]+/gi, "-")}`;

/** What an input needs to name its hint and its error (kept out of its label, so the label stays its name). */
interface InputAttrs {
  id: string;
  "aria-invalid"?: true;
  "aria-describedby"?: string;
}

function inputAttrs(k: string, errors: Errors, hint?: boolean): InputAttrs {
  const described = [hint ? hintId(k) : "", errors.has(k) ? errId(k) : ""].filter(Boolean).join(" ");
  return {
    id: inputId(k),
    ...(errors.has(k) ? { "aria-invalid": true as const } : {}),
    ...(described ? { "aria-describedby": described } : {}),
  };
}

function Field({
  label,
  k,
  errors,
  hint,
  wide,
  children,
}: {
  label: string;
  k: string;
  errors: Errors;
  hint?: string;
  wide?: boolean;
  children: (a: InputAttrs) => ComponentChildren;
}) {
  return (
    <div class={wide ? "field wide" : "field"}>
      <label for={inputId(k)}>{label}</label>
      {children(inputAttrs(k, errors, !!hint))}
      {hint ? (
        <span class="hint" id={hintId(k)}>
          {hint}
        </span>
      ) : null}
      <FieldErrors k={k} errors={errors} />
    </div>
  );
}

/** A checkbox field: the box inside its label, its error beside (not inside) the label. */
function Check({
  label,
  k,
  errors,
  checked,
  onChange,
}: {
  label: string;
  k: string;
  errors: Errors;
  checked: boolean;
  onChange: (v: boolean) => void;
}) {
  return (
    <div class="field check-field">
      <label class="check">
        <input
          type="checkbox"
          checked={checked}
          onChange={(e) => onChange((e.target as HTMLInputElement).checked)}
          {...inputAttrs(k, errors)}
        />
        <span>{label}</span>
      </label>
      <FieldErrors k={k} errors={errors} />
    </div>
  );
}

function timeZones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (key: string) => string[] };
  try {
    return intl.supportedValuesOf?.("timeZone") ?? [];
  } catch {
    return [];
  }
}

export function ConfigForm({ destination, onSaved }: { destination: Destination; onSaved: (d: Destination) => void }) {
  const s = useSession();
  const [initial, setInitial] = useState(() => fromDestination(destination));
  const [f, setF] = useState(initial);
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<string | null>(null);
  const [apiError, setApiError] = useState<Error | null>(null);
  const [errors, setErrors] = useState<Errors>(new Map());
  const [unplaced, setUnplaced] = useState<Problem[]>([]);
  const zones = useMemo(timeZones, []);

  const set = <K extends keyof FormState>(k: K, v: FormState[K]) => {
    setF((old) => ({ ...old, [k]: v }));
    setNote(null);
  };
  const text = (k: keyof FormState) => ({
    value: f[k] as string,
    onInput: (e: Event) => set(k, (e.target as HTMLInputElement).value as never),
  });

  const showProblems = (problems: Problem[]) => {
    const placed: Errors = new Map();
    const rest: Problem[] = [];
    for (const p of problems) {
      const k = fieldKey(p.field);
      if (k === null) rest.push(p);
      else placed.set(k, [...(placed.get(k) ?? []), p.field === k ? p.message : `${p.field} ${p.message}`]);
    }
    setErrors(placed);
    setUnplaced(rest);
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    setApiError(null);
    setNote(null);
    const local: Problem[] = [];
    const body = changedFields(initial, f, local);
    if (local.length) {
      showProblems(local);
      return;
    }
    showProblems([]);
    if (Object.keys(body).length === 0) {
      setNote("No changes to save.");
      return;
    }
    setBusy(true);
    try {
      const updated = await s.client.patch("/v1/destinations/{id}", {
        params: { path: { id: destination.id } },
        body,
      });
      const next = fromDestination(updated);
      setInitial(next);
      setF(next);
      setNote("Saved");
      onSaved(updated);
    } catch (err) {
      setApiError(err instanceof Error ? err : new Error(String(err)));
      if (err instanceof SluiceApiError) showProblems(err.fields);
    } finally {
      setBusy(false);
    }
  };

  const reset = () => {
    setF(initial);
    setApiError(null);
    setNote(null);
    showProblems([]);
  };

  const { code: apiCode, message: apiMessage } = apiError ? errorText(apiError, s.portal !== null) : { code: null, message: "" };

  return (
    <form class="card config-form" onSubmit={(e) => void submit(e)} aria-labelledby="settings-title" noValidate>
      <h2 id="settings-title">Settings</h2>
      {apiError ? (
        <div class="error" role="alert">
          <p>
            {apiCode ? <code>{apiCode}</code> : null} {apiMessage}
          </p>
          {unplaced.length ? (
            <ul>
              {unplaced.map((p) => (
                <li key={p.field}>
                  <code>{p.field}</code> {p.message}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : errors.size ? (
        <div class="error" role="alert">
          <p>Some fields need a change before they can be saved.</p>
        </div>
      ) : null}

      <div class="form-grid">
        <Field label="Name" k="name" errors={errors}>
          {(a) => <input type="text" {...text("name")} {...a} />}
        </Field>
        <Field label="URL" k="url" errors={errors} wide>
          {(a) => <input type="url" {...text("url")} {...a} />}
        </Field>
        <Field
          label="Event types"
          k="event_types"
          errors={errors}
          hint="comma or space separated; empty = all; order.* matches a prefix"
          wide
        >
          {(a) => <input type="text" {...text("event_types")} {...a} />}
        </Field>
        <Field label="Timeout (seconds)" k="timeout_seconds" errors={errors}>
          {(a) => <input type="number" inputMode="numeric" {...text("timeout_seconds")} {...a} />}
        </Field>
        <Field label="Max concurrency" k="max_concurrency" errors={errors}>
          {(a) => <input type="number" inputMode="numeric" {...text("max_concurrency")} {...a} />}
        </Field>
        <Check
          label="Ordered (one at a time, oldest first)"
          k="ordered"
          errors={errors}
          checked={f.ordered}
          onChange={(v) => set("ordered", v)}
        />
      </div>

      <fieldset>
        <legend>Rate limit</legend>
        <FieldErrors k="rate_limit" errors={errors} />
        <p class="hint">Leave all three empty for no rate limit.</p>
        <div class="form-grid">
          <Field label="Per second" k="rate_limit.max_per_second" errors={errors}>
            {(a) => <input type="number" step="any" {...text("per_second")} {...a} />}
          </Field>
          <Field label="Per minute" k="rate_limit.max_per_minute" errors={errors}>
            {(a) => <input type="number" step="any" {...text("per_minute")} {...a} />}
          </Field>
          <Field label="Burst" k="rate_limit.burst_capacity" errors={errors}>
            {(a) => <input type="number" {...text("burst")} {...a} />}
          </Field>
        </div>
      </fieldset>

      <fieldset>
        <legend>Adaptive pace</legend>
        <FieldErrors k="adaptive" errors={errors} />
        <label class="check">
          <input type="checkbox" checked={f.adaptive} onChange={(e) => set("adaptive", (e.target as HTMLInputElement).checked)} />
          <span>Find the pace it can take</span>
        </label>
        <p class="hint">
          Slows down on 429, 503, timeouts and rising latency; speeds up while answers are fast. A rate limit above still caps it. Off
          forgets the pace found.
        </p>
        {f.adaptive ? (
          <div class="form-grid">
            <Field label="Slowest (per second)" k="adaptive.min_per_second" errors={errors} hint="empty: 1">
              {(a) => <input type="number" step="any" {...text("adaptive_min")} {...a} />}
            </Field>
            <Field label="Fastest (per second)" k="adaptive.max_per_second" errors={errors} hint="empty: 1000">
              {(a) => <input type="number" step="any" {...text("adaptive_max")} {...a} />}
            </Field>
            <Field
              label="Target latency (ms)"
              k="adaptive.target_latency_ms"
              errors={errors}
              hint="empty: slow down when latency is well above its own baseline"
            >
              {(a) => <input type="number" {...text("adaptive_target")} {...a} />}
            </Field>
          </div>
        ) : null}
      </fieldset>

      <fieldset>
        <legend>Quiet hours</legend>
        <FieldErrors k="delivery_schedule" errors={errors} />
        <label class="check">
          <input type="checkbox" checked={f.quiet} onChange={(e) => set("quiet", (e.target as HTMLInputElement).checked)} />
          <span>Enable quiet hours</span>
        </label>
        {f.quiet ? (
          <>
            <div class="form-grid">
              <Field label="Time zone" k="delivery_schedule.timezone" errors={errors} hint="an IANA zone, e.g. Europe/Berlin">
                {(a) => <input type="text" list="tz-list" autocomplete="off" {...text("timezone")} {...a} />}
              </Field>
              <datalist id="tz-list">
                {zones.map((z) => (
                  <option key={z} value={z} />
                ))}
              </datalist>
              <Field label="Start" k="delivery_schedule.quiet_start" errors={errors}>
                {(a) => <input type="time" {...text("quiet_start")} {...a} />}
              </Field>
              <Field label="End" k="delivery_schedule.quiet_end" errors={errors}>
                {(a) => <input type="time" {...text("quiet_end")} {...a} />}
              </Field>
            </div>
            <fieldset
              class="days"
              aria-invalid={errors.has("delivery_schedule.days") || undefined}
              aria-describedby={errors.has("delivery_schedule.days") ? errId("delivery_schedule.days") : undefined}
            >
              <legend>Days</legend>
              {DAYS.map((day) => (
                <label class="check" key={day}>
                  <input
                    type="checkbox"
                    checked={f.days.includes(day)}
                    onChange={(e) =>
                      set("days", (e.target as HTMLInputElement).checked ? [...f.days, day] : f.days.filter((x) => x !== day))
                    }
                  />
                  <span>{DAY_LABELS[day]}</span>
                </label>
              ))}
              <FieldErrors k="delivery_schedule.days" errors={errors} />
            </fieldset>
            <div class="form-grid">
              <Field label="Applies to" k="delivery_schedule.applies_to" errors={errors} hint="event types held in the window; empty = all">
                {(a) => <input type="text" {...text("applies_to")} {...a} />}
              </Field>
              <Field
                label="Bypass event types"
                k="delivery_schedule.bypass_event_types"
                errors={errors}
                hint="event types that go even in the window"
              >
                {(a) => <input type="text" {...text("bypass")} {...a} />}
              </Field>
            </div>
          </>
        ) : null}
      </fieldset>

      <fieldset>
        <legend>Retries, throttling and probes</legend>
        <div class="form-grid">
          <Field label="Retry schedule (seconds)" k="retry_schedule_seconds" errors={errors} hint="comma separated, e.g. 10, 60, 600">
            {(a) => <input type="text" {...text("retry")} {...a} />}
          </Field>
          <Field
            label="Throttle schedule (seconds)"
            k="throttle_schedule_seconds"
            errors={errors}
            hint="waits after 429s in a row without Retry-After"
          >
            {(a) => <input type="text" {...text("throttle")} {...a} />}
          </Field>
          <Field label="Probe interval (seconds)" k="probe_interval_seconds" errors={errors}>
            {(a) => <input type="number" {...text("probe_interval")} {...a} />}
          </Field>
          <Field
            label="Paused retention (hours)"
            k="paused_retention_hours"
            errors={errors}
            hint="held deliveries of a paused destination are discarded after this"
          >
            {(a) => <input type="number" {...text("paused_retention")} {...a} />}
          </Field>
          <Check
            label="Replay held deliveries on resume"
            k="replay_on_resume"
            errors={errors}
            checked={f.replay_on_resume}
            onChange={(v) => set("replay_on_resume", v)}
          />
        </div>
      </fieldset>

      <fieldset>
        <legend>Headers</legend>
        <div class="form-grid">
          <Field
            label="Headers"
            k="headers"
            errors={errors}
            wide
            hint="one “Name: value” per line; a secret value shows as •••••• — leave it so to keep it"
          >
            {(a) => <textarea rows={4} spellcheck={false} {...text("headers")} {...a} />}
          </Field>
          <Field
            label="Secret header names"
            k="secret_headers"
            errors={errors}
            wide
            hint="headers whose values are never shown again (Authorization always is)"
          >
            {(a) => <input type="text" {...text("secret_headers")} {...a} />}
          </Field>
        </div>
      </fieldset>

      <div class="form-actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Saving…" : "Save changes"}
        </button>
        <button type="button" onClick={reset} disabled={busy}>
          Reset
        </button>
        <span role="status" class="saved-note">
          {note}
        </span>
      </div>
    </form>
  );
}
