import type { ComponentChildren } from "preact";
import { useContext, useEffect, useRef, useState } from "preact/hooks";
import { Session } from "../context.js";
import { SluiceApiError } from "../session.js";

// A portal visitor holds a link, not an API key, and cannot act on advice about keys and tenants
// (the API's 404 says "check … that you use the key of the tenant that owns it"): these say what
// the refusal means to them.
const ASK = "Ask the service that gave you this link for one that includes it.";
const PORTAL_MESSAGES: Partial<Record<SluiceApiError["code"], string>> = {
  SLUICE_DESTINATION_NOT_FOUND: `This destination is not part of this portal link. ${ASK}`,
  SLUICE_DELIVERY_NOT_FOUND: `This delivery is not part of this portal link: it belongs to a destination the link does not include. ${ASK}`,
  SLUICE_EVENT_NOT_FOUND: `This event is not part of this portal link. ${ASK}`,
  SLUICE_RECOVERY_NOT_FOUND: "This recovery is not part of this portal link (or has ended and is no longer kept).",
  SLUICE_PORTAL_READ_ONLY:
    "This portal link can view deliveries but not change them. Ask the service that gave you this link for one that can.",
  SLUICE_PORTAL_FORBIDDEN: "This portal link cannot do that. Ask the service that gave you this link.",
};

/**
 * An API error as its reader can use it: the API's code and message for a key holder; for a
 * portal visitor, the words above where the API's speak of keys (and no code).
 */
export function errorText(e: Error, inPortal: boolean): { code: string | null; message: string } {
  if (!(e instanceof SluiceApiError)) return { code: null, message: e.message };
  const forVisitor = inPortal ? PORTAL_MESSAGES[e.code] : undefined;
  return forVisitor ? { code: null, message: forVisitor } : { code: e.code, message: e.message };
}

/** An API error as the API said it (or, in a portal, as its visitor can use it), and each invalid field. */
export function ErrorNote({ error }: { error: unknown }) {
  const inPortal = useContext(Session)?.portal != null;
  if (!error) return null;
  const e = error instanceof Error ? error : new Error(typeof error === "string" ? error : JSON.stringify(error));
  const fields = e instanceof SluiceApiError ? e.fields : [];
  const { code, message } = errorText(e, inPortal);
  return (
    <div class="error" role="alert">
      <p>
        {code ? <code>{code}</code> : null} {message}
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
