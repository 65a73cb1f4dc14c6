import type { Destination } from "../api.js";

// Every config field of a destination in one table, as src/config.ts keeps its settings: where the
// API keeps the field, its label and hint, how its input shows the API's value and what is sent
// for what was typed. The form's state, the body it sends and where an API error is shown are all
// derived from the table, so a new field is one row (and, if no control below fits it, a control
// drawn for it in config-form.tsx). Nothing here validates: what is sent is what was typed, so the
// messages shown are the API's own.

export const DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
export type Day = (typeof DAYS)[number];
export const DAY_LABELS: Record<Day, string> = { mon: "Mon", tue: "Tue", wed: "Wed", thu: "Thu", fri: "Fri", sat: "Sat", sun: "Sun" };

export interface Problem {
  field: string;
  message: string;
}

/** What one input holds: the text typed, a checkbox, or the days ticked. */
export type Value = string | boolean | readonly Day[];

/** The form by field path (`rate_limit.max_per_second`); a section's on/off box is under the section's object. */
export type FormState = Readonly<Record<string, Value>>;

/** The <input> attributes a field may ask for. */
export type InputSpec = { type: "text" } | { type: "url" } | { type: "time" } | { type: "number"; step?: "any"; inputMode?: "numeric" };

/** How a field is edited: an <input>, or a control config-form.tsx draws by this name. */
export type Control = InputSpec | "check" | "textarea" | "zone" | "days";

/** How a field's value goes between the API and its input. */
interface Kind {
  /** The input's value for what the API holds (undefined: the field, or its object, is absent). */
  show(api: unknown): Value;
  send(v: unknown, problems: Problem[]): unknown;
  /** Nothing given: left out of its object, so the API's default applies (at the top level it is sent as is). */
  blank?(v: unknown): boolean;
  control: Control;
  /** Its members are names someone chose (header names may hold dots): every path under it is its own. */
  names?: true;
}

export const asText = (v: unknown): string => (typeof v === "string" ? v : "");
const isDay = (x: unknown): x is Day => (DAYS as readonly unknown[]).includes(x);
export const asDays = (v: unknown): readonly Day[] => (Array.isArray(v) ? v.filter(isDay) : []);

/** A number when it reads as one; otherwise what was typed, so the API says what is wrong with it. */
function num(s: string): unknown {
  const t = s.trim();
  if (t === "") return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : t;
}
const words = (s: string) => s.split(/[\s,]+/).filter(Boolean);
const joined = (x: unknown) => (Array.isArray(x) ? x.join(", ") : "");

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

/** Text as typed (`trim`: without the spaces around it); `or` shows when the API has none. */
const text = ({ trim = false, or = "" } = {}): Kind => ({
  show: (x) => (typeof x === "string" ? x : or),
  send: (v) => (trim ? asText(v).trim() : asText(v)),
  control: { type: "text" },
});
const numeric: Kind = {
  show: (x) => (typeof x === "number" ? String(x) : ""),
  send: (v) => num(asText(v)),
  blank: (v) => asText(v).trim() === "",
  control: { type: "number" },
};
const list: Kind = {
  show: joined,
  send: (v) => words(asText(v)),
  blank: (v) => words(asText(v)).length === 0,
  control: { type: "text" },
};
const numbers: Kind = { show: joined, send: (v) => words(asText(v)).map(num), control: { type: "text" } };
const flag: Kind = { show: (x) => x === true, send: (v) => v === true, control: "check" };
// With no schedule yet, the zone offered is the browser's own.
const zone: Kind = {
  show: (x) => (typeof x === "string" ? x : Intl.DateTimeFormat().resolvedOptions().timeZone),
  send: (v) => asText(v).trim(),
  control: "zone",
};
// All seven is the default, so it is left out; none is sent as [] for the API to refuse.
const weekdays: Kind = {
  show: (x) => (Array.isArray(x) && x.length ? x.filter(isDay) : [...DAYS]),
  send: (v) => DAYS.filter((d) => asDays(v).includes(d)),
  blank: (v) => asDays(v).length >= DAYS.length,
  control: "days",
};
const headerLines: Kind = {
  show: (x) =>
    typeof x === "object" && x !== null
      ? Object.entries(x)
          .map(([k, v]) => `${k}: ${asText(v)}`)
          .join("\n")
      : "",
  send: (v, problems) => parseHeaders(asText(v), problems),
  control: "textarea",
  names: true,
};

/** A field's name in its section's object, or the destination's own when the section has none. */
type Member<O> = Extract<O extends keyof Destination ? keyof NonNullable<Destination[O]> : keyof Destination, string>;

export interface Field<K extends string = string> {
  key: K;
  label: string;
  kind: Kind;
  hint?: string;
  /** Spans the whole row of the grid. */
  wide?: boolean;
  /** Instead of its kind's usual control. */
  control?: Control;
}

/** A part of the form: a fieldset (or the form's opening inputs), and the API object it edits if any. */
export interface Section {
  /** None: its inputs open the form, outside any fieldset. */
  legend?: string;
  /** The API object its fields are members of; none: they are the destination's own. */
  object?: keyof Destination;
  /** A box that turns the object on (off sends null); `flag`: the member it is also sent as, true. */
  toggle?: { label: string; flag?: string };
  hint?: string;
  fields: readonly Field[];
}

/** A section whose field names (and flag) are checked against the API's type of its object. */
function section<O extends keyof Destination | undefined = undefined>(
  s: Omit<Section, "object" | "toggle" | "fields"> & {
    object?: O;
    toggle?: { label: string; flag?: Member<O> };
    fields: readonly Field<Member<O>>[];
  },
): Section {
  return s;
}

const DECIMAL: InputSpec = { type: "number", step: "any" };
const COUNT: InputSpec = { type: "number", inputMode: "numeric" };
const TIME: InputSpec = { type: "time" };

export const SECTIONS: readonly Section[] = [
  section({
    fields: [
      { key: "name", label: "Name", kind: text() },
      { key: "url", label: "URL", kind: text({ trim: true }), control: { type: "url" }, wide: true },
      {
        key: "event_types",
        label: "Event types",
        kind: list,
        hint: "comma or space separated; empty = all; order.* matches a prefix",
        wide: true,
      },
      { key: "timeout_seconds", label: "Timeout (seconds)", kind: numeric, control: COUNT },
      { key: "max_concurrency", label: "Max concurrency", kind: numeric, control: COUNT },
      { key: "ordered", label: "Ordered (one at a time, oldest first)", kind: flag },
    ],
  }),
  section({
    legend: "Rate limit",
    object: "rate_limit",
    hint: "Leave all three empty for no rate limit.",
    fields: [
      { key: "max_per_second", label: "Per second", kind: numeric, control: DECIMAL },
      { key: "max_per_minute", label: "Per minute", kind: numeric, control: DECIMAL },
      { key: "burst_capacity", label: "Burst", kind: numeric },
    ],
  }),
  section({
    legend: "Adaptive pace",
    object: "adaptive",
    toggle: { label: "Find the pace it can take", flag: "enabled" },
    hint:
      "Slows down on 429, 503, timeouts and rising latency; speeds up while answers are fast. A rate limit above still caps it. " +
      "Off forgets the pace found.",
    fields: [
      { key: "min_per_second", label: "Slowest (per second)", kind: numeric, control: DECIMAL, hint: "empty: 1" },
      { key: "max_per_second", label: "Fastest (per second)", kind: numeric, control: DECIMAL, hint: "empty: 1000" },
      {
        key: "target_latency_ms",
        label: "Target latency (ms)",
        kind: numeric,
        hint: "empty: slow down when latency is well above its own baseline",
      },
    ],
  }),
  section({
    legend: "Quiet hours",
    object: "delivery_schedule",
    toggle: { label: "Enable quiet hours" },
    fields: [
      { key: "timezone", label: "Time zone", kind: zone, hint: "an IANA zone, e.g. Europe/Berlin" },
      { key: "quiet_start", label: "Start", kind: text({ or: "22:00" }), control: TIME },
      { key: "quiet_end", label: "End", kind: text({ or: "07:00" }), control: TIME },
      { key: "days", label: "Days", kind: weekdays },
      { key: "applies_to", label: "Applies to", kind: list, hint: "event types held in the window; empty = all" },
      { key: "bypass_event_types", label: "Bypass event types", kind: list, hint: "event types that go even in the window" },
    ],
  }),
  section({
    legend: "Retries, throttling and probes",
    fields: [
      { key: "retry_schedule_seconds", label: "Retry schedule (seconds)", kind: numbers, hint: "comma separated, e.g. 10, 60, 600" },
      {
        key: "throttle_schedule_seconds",
        label: "Throttle schedule (seconds)",
        kind: numbers,
        hint: "waits after 429s in a row without Retry-After",
      },
      { key: "probe_interval_seconds", label: "Probe interval (seconds)", kind: numeric },
      {
        key: "paused_retention_hours",
        label: "Paused retention (hours)",
        kind: numeric,
        hint: "held deliveries of a paused destination are discarded after this",
      },
      { key: "replay_on_resume", label: "Replay held deliveries on resume", kind: flag },
    ],
  }),
  section({
    legend: "Headers",
    fields: [
      {
        key: "headers",
        label: "Headers",
        kind: headerLines,
        hint: "one “Name: value” per line; a secret value shows as •••••• — leave it so to keep it",
        wide: true,
      },
      {
        key: "secret_headers",
        label: "Secret header names",
        kind: list,
        hint: "headers whose values are never shown again (Authorization always is)",
        wide: true,
      },
    ],
  }),
];

/** Where a field's value is in the form, and the API's name for it in an error. */
export const pathOf = (s: Section, f: Field) => (s.object ? `${s.object}.${f.key}` : f.key);

export const controlOf = (f: Field): Control => f.control ?? f.kind.control;

/** The member `key` of an API object, if there is one. */
const member = (o: unknown, key: string): unknown =>
  typeof o === "object" && o !== null ? (o as Record<string, unknown>)[key] : undefined;

export function fromDestination(d: Destination): FormState {
  const out: Record<string, Value> = {};
  for (const s of SECTIONS) {
    const o: unknown = s.object ? d[s.object] : d;
    if (s.object && s.toggle) out[s.object] = s.toggle.flag ? member(o, s.toggle.flag) === true : o !== null;
    for (const f of s.fields) out[pathOf(s, f)] = f.kind.show(member(o, f.key));
  }
  return out;
}

/** The config the form says, field by field, as the API takes it. */
export function toConfig(form: FormState, problems: Problem[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of SECTIONS) {
    if (!s.object) {
      for (const f of s.fields) out[f.key] = f.kind.send(form[pathOf(s, f)], problems);
      continue;
    }
    // Off is null (the API forgets the object); on, only the members given (the rest default).
    if (s.toggle && form[s.object] !== true) {
      out[s.object] = null;
      continue;
    }
    const o: Record<string, unknown> = s.toggle?.flag ? { [s.toggle.flag]: true } : {};
    for (const f of s.fields) {
      const v = form[pathOf(s, f)];
      if (!f.kind.blank?.(v)) o[f.key] = f.kind.send(v, problems);
    }
    // Without a box to turn it off, an object with nothing given is none at all.
    out[s.object] = s.toggle || Object.keys(o).length ? o : null;
  }
  return out;
}

/** Only the fields whose value differs from what the untouched form would send. */
export function changedFields(initial: FormState, now: FormState, problems: Problem[] = []): Record<string, unknown> {
  const before = toConfig(initial);
  const after = toConfig(now, problems);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(after)) if (JSON.stringify(v) !== JSON.stringify(before[k])) out[k] = v;
  return out;
}

// Where each API field path is shown: a field, or the section of an object (its box and its fields).
const FIELD_KEYS = new Set(SECTIONS.flatMap((s) => [...(s.object ? [s.object] : []), ...s.fields.map((f) => pathOf(s, f))]));
const NAMED = SECTIONS.flatMap((s) => s.fields.filter((f) => f.kind.names).map((f) => pathOf(s, f)));

/** Where an API error about `path` is shown: its field, else its nearest known parent, else null (the top). */
export function fieldKey(path: string): string | null {
  const named = NAMED.find((k) => path === k || path.startsWith(`${k}.`));
  if (named !== undefined) return named;
  let f = path.replace(/\[\d+\]/g, "");
  for (;;) {
    if (FIELD_KEYS.has(f)) return f;
    const dot = f.lastIndexOf(".");
    if (dot < 0) return null;
    f = f.slice(0, dot);
  }
}
