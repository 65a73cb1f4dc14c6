import { useEffect, useState } from "preact/hooks";
import type { Tenant } from "../api.js";
import { ErrorNote } from "../components/common.js";
import { clientFor, SluiceApiError, type Credentials } from "../session.js";

/**
 * Sign-in with a tenant's API key, or with the admin key (SLUICE_ADMIN_KEY), which then picks a
 * tenant to act for. The key stays in this tab's sessionStorage only.
 */
export function SignIn({ onSignedIn, notice }: { onSignedIn: (c: Credentials) => void; notice?: string }) {
  const [key, setKey] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    const token = key.trim();
    if (!token) return setError(new Error("Enter an API key: the one Sluice printed at its first start, or one from POST /v1/api-keys."));
    setBusy(true);
    setError(null);
    try {
      await clientFor({ token, kind: "key" }).get("/v1/tenant");
      onSignedIn({ token, kind: "key" });
    } catch (err) {
      // Not a tenant key: perhaps the admin key, which lists tenants (on a tenant route it is
      // refused for want of a Sluice-Tenant header).
      const maybeAdmin = err instanceof SluiceApiError && (err.status === 401 || err.code === "SLUICE_AUTH_TENANT_REQUIRED");
      const admin = maybeAdmin ? await isAdminKey(token) : false;
      if (admin) onSignedIn({ token, kind: "admin" });
      else setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="signin" id="main">
      <h1>Sign in to Sluice</h1>
      {notice ? <p role="status">{notice}</p> : null}
      <form onSubmit={(e) => void submit(e)}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="current-password"
          value={key}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
          aria-describedby="api-key-help"
          required
        />
        <p id="api-key-help" class="muted">
          A tenant's API key, or the admin key to switch between tenants. It is kept in this tab only.
        </p>
        <button class="primary" type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <ErrorNote error={error} />
    </main>
  );
}

async function isAdminKey(token: string): Promise<boolean> {
  try {
    await clientFor({ token, kind: "admin" }).get("/v1/tenants", { params: { query: { limit: 1 } } });
    return true;
  } catch {
    return false;
  }
}

export function TenantPicker({
  creds,
  onPick,
  onSignOut,
}: {
  creds: Credentials;
  onPick: (c: Credentials) => void;
  onSignOut: () => void;
}) {
  const [tenants, setTenants] = useState<Tenant[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    clientFor(creds)
      .get("/v1/tenants", { params: { query: { limit: 1000 } } })
      .then((p) => setTenants(p.data), setError);
  }, []);
  return (
    <main class="signin" id="main">
      <h1>Choose a tenant</h1>
      <p class="muted">Signed in with the admin key. Pick the tenant to look at; you can switch at any time.</p>
      <ErrorNote error={error} />
      {tenants ? (
        <ul class="tenant-list">
          {tenants.map((t) => (
            <li key={t.id}>
              <button type="button" onClick={() => onPick({ ...creds, tenantId: t.id })}>
                {t.name ?? t.id} <span class="muted">{t.id}</span>
              </button>
            </li>
          ))}
        </ul>
      ) : null}
      <button type="button" onClick={onSignOut}>
        Sign out
      </button>
    </main>
  );
}
