import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { SluiceApiError } from "../session.js";

/** An API error as the API said it: the message, and each invalid field. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const e = error instanceof Error ? error : new Error(typeof error === "string" ? error : JSON.stringify(error));
  const fields = e instanceof SluiceApiError ? e.fields : [];
  return (
    <div class="error" role="alert">
      <p>
        {e instanceof SluiceApiError ? <code>{e.code}</code> : null} {e.message}
      </p>
      {fields.length ? (
        <ul>
          {fields.map((f) => (
            <li key={f.field}>
              <code>{f.field}</code> {f.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}

export function Card({
  title,
  children,
  actions,
  id,
}: {
  title: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
  id?: string;
}) {
  return (
    <section class="card" aria-labelledby={id}>
      <header class="card-head">
        <h2 id={id}>{title}</h2>
        {actions ? <div class="card-actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

/** A labelled value in a definition list. */
export function Fact({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="fact">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/**
 * A modal confirmation on the native <dialog> (focus is trapped and Escape closes it, by the
 * browser). `onConfirm` may throw: its error is shown and the dialog stays open.
 */
export function Confirm({
  open,
  title,
  children,
  confirmLabel,
  onConfirm,
  onClose,
  danger,
}: {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => Promise<void>;
  onClose: () => void;
  danger?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) {
      setError(null);
      d.showModal();
    } else if (!open && d.open) d.close();
  }, [open]);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      onClose();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <dialog ref={ref} onClose={onClose} aria-labelledby="confirm-title">
      <h2 id="confirm-title">{title}</h2>
      <div>{children}</div>
      <ErrorNote error={error} />
      <div class="dialog-actions">
        <button type="button" onClick={onClose}>
          Cancel
        </button>
        <button type="button" class={danger ? "danger" : "primary"} disabled={busy} onClick={() => void confirm()}>
          {busy ? "Working…" : confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/** Copies text and says so for a moment (and to screen readers). */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // Clipboard refused (insecure context, frame policy): select the text instead for Ctrl-C.
      const ta = document.createElement("textarea");
      ta.value = text;
      document.body.append(ta);
      ta.select();
      document.execCommand("copy");
      ta.remove();
    }
    setDone(true);
    setTimeout(() => setDone(false), 1500);
  };
  return (
    <button type="button" onClick={() => void copy()} aria-live="polite">
      {done ? "Copied" : label}
    </button>
  );
}

/** A filter's drop-down: "any" (the empty value) or one of `choices`, shown with spaces for underscores. */
export function ChoiceFilter({
  label,
  value,
  choices,
  onChange,
}: {
  label: string;
  value: string;
  choices: readonly string[];
  onChange: (value: string) => void;
}) {
  return (
    <label>
      <span>{label}</span>
      <select value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
        <option value="">any</option>
        {choices.map((c) => (
          <option key={c} value={c}>
            {c.replace("_", " ")}
          </option>
        ))}
      </select>
    </label>
  );
}
