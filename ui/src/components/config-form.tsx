import type { ComponentChildren } from "preact";
import { useMemo, useState } from "preact/hooks";
import type { Destination } from "../api.js";
import { useSession } from "../context.js";
import { SluiceApiError } from "../session.js";
import { errorText } from "./common.js";
import {
  asDays,
  asText,
  changedFields,
  controlOf,
  DAY_LABELS,
  DAYS,
  fieldKey,
  fromDestination,
  pathOf,
  SECTIONS,
  type Day,
  type Field as FieldSpec,
  type FormState,
  type Problem,
  type Section,
  type Value,
} from "./config-fields.js";

// Edits every config field of a destination and PATCHes only what changed. It does not validate:
// what it sends is what was typed, so the messages shown are the API's own (each put beside its
// input by the field path the API names). The fields, and what each sends, are the table in
// config-fields.ts; this draws it.

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

/** What every field's drawing takes: its label, its path (naming its input, hint and error) and the errors shown. */
interface Labelled {
  label: string;
  k: string;
  errors: Errors;
}

function Field({
  label,
  k,
  errors,
  hint,
  wide,
  children,
}: Labelled & { hint?: string; wide?: boolean; children: (a: InputAttrs) => ComponentChildren }) {
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
function Check({ label, k, errors, checked, onChange }: Labelled & { checked: boolean; onChange: (v: boolean) => void }) {
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

function ZoneList() {
  const zones = useMemo(timeZones, []);
  return (
    <datalist id="tz-list">
      {zones.map((z) => (
        <option key={z} value={z} />
      ))}
    </datalist>
  );
}

/** The days a schedule holds: a box each, in a fieldset of its own (its error beside the boxes). */
function Days({ label, k, errors, days, onChange }: Labelled & { days: readonly Day[]; onChange: (v: Value) => void }) {
  return (
    <fieldset class="days" aria-invalid={errors.has(k) || undefined} aria-describedby={errors.has(k) ? errId(k) : undefined}>
      <legend>{label}</legend>
      {DAYS.map((day) => (
        <label class="check" key={day}>
          <input
            type="checkbox"
            checked={days.includes(day)}
            onChange={(e) => onChange((e.target as HTMLInputElement).checked ? [...days, day] : days.filter((x) => x !== day))}
          />
          <span>{DAY_LABELS[day]}</span>
        </label>
      ))}
      <FieldErrors k={k} errors={errors} />
    </fieldset>
  );
}

interface FieldViewProps {
  field: FieldSpec;
  k: string;
  value: Value | undefined;
  errors: Errors;
  onChange: (v: Value) => void;
}

/** One field, drawn as its control says. */
function FieldView({ field, k, value, errors, onChange }: FieldViewProps) {
  const c = controlOf(field);
  if (c === "check") return <Check label={field.label} k={k} errors={errors} checked={value === true} onChange={onChange} />;
  if (c === "days") return <Days label={field.label} k={k} errors={errors} days={asDays(value)} onChange={onChange} />;
  const typed = { value: asText(value), onInput: (e: Event) => onChange((e.target as HTMLInputElement).value) };
  const wrap = (input: (a: InputAttrs) => ComponentChildren) => (
    <Field label={field.label} k={k} errors={errors} hint={field.hint} wide={field.wide}>
      {input}
    </Field>
  );
  if (c === "textarea") return wrap((a) => <textarea rows={4} spellcheck={false} {...typed} {...a} />);
  if (c === "zone") {
    return (
      <>
        {wrap((a) => (
          <input type="text" list="tz-list" autocomplete="off" {...typed} {...a} />
        ))}
        <ZoneList />
      </>
    );
  }
  return wrap((a) => <input {...c} {...typed} {...a} />);
}

/** A section's fields, in grids of inputs; a control that is a fieldset of its own (the days) stands between grids. */
function SectionView({ s, form, errors, set }: { s: Section; form: FormState; errors: Errors; set: (k: string, v: Value) => void }) {
  const on = !s.object || !s.toggle || form[s.object] === true;
  const parts: ComponentChildren[] = [];
  let grid: ComponentChildren[] = [];
  const endGrid = () => {
    if (grid.length)
      parts.push(
        <div class="form-grid" key={parts.length}>
          {grid}
        </div>,
      );
    grid = [];
  };
  for (const f of on ? s.fields : []) {
    const k = pathOf(s, f);
    const node = <FieldView key={k} field={f} k={k} value={form[k]} errors={errors} onChange={(v) => set(k, v)} />;
    if (controlOf(f) === "days") {
      endGrid();
      parts.push(node);
    } else grid.push(node);
  }
  endGrid();
  if (!s.legend) return <>{parts}</>;
  const object = s.object;
  return (
    <fieldset>
      <legend>{s.legend}</legend>
      {object ? <FieldErrors k={object} errors={errors} /> : null}
      {object && s.toggle ? (
        <label class="check">
          <input type="checkbox" checked={on} onChange={(e) => set(object, (e.target as HTMLInputElement).checked)} />
          <span>{s.toggle.label}</span>
        </label>
      ) : null}
      {s.hint ? <p class="hint">{s.hint}</p> : null}
      {parts}
    </fieldset>
  );
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

  const set = (k: string, v: Value) => {
    setF((old) => ({ ...old, [k]: v }));
    setNote(null);
  };

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

      {SECTIONS.map((sec) => (
        <SectionView key={sec.legend ?? ""} s={sec} form={f} errors={errors} set={set} />
      ))}

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
