import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { useSession } from "../context.js";
import type { Tenant } from "../api.js";

const NAV = [
  { key: "destinations", path: "#/", label: "Destinations" },
  { key: "overview", path: "#/overview", label: "Overview" },
  { key: "events", path: "#/events", label: "Events" },
  { key: "deliveries", path: "#/deliveries", label: "Deliveries" },
];

export function Layout({
  active,
  children,
  onSwitchTenant,
}: {
  active: string;
  children: ComponentChildren;
  onSwitchTenant: (id: string) => void;
}) {
  const s = useSession();
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">{s.portal ? (s.portal.tenant.name ?? "Webhooks") : "Sluice"}</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.key}>
                <a href={n.path} aria-current={active === n.key ? "page" : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          {s.creds.kind === "admin" ? <TenantSwitcher current={s.creds.tenantId} onSwitch={onSwitchTenant} /> : null}
          {s.portal ? (
            <span class="muted">{s.portal.read_only ? "read-only view" : "portal"}</span>
          ) : (
            <button type="button" onClick={() => s.signOut()}>
              Sign out
            </button>
          )}
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}

function TenantSwitcher({ current, onSwitch }: { current?: string; onSwitch: (id: string) => void }) {
  const s = useSession();
  const [tenants, setTenants] = useState<Tenant[]>([]);
  useEffect(() => {
    s.client.get("/v1/tenants", { params: { query: { limit: 1000 } } }).then(
      (p) => setTenants(p.data),
      () => setTenants([]),
    );
  }, []);
  return (
    <label class="inline">
      <span>Tenant</span>
      <select value={current} onChange={(e) => onSwitch((e.target as HTMLSelectElement).value)}>
        {tenants.map((t) => (
          <option key={t.id} value={t.id}>
            {t.name ?? t.id}
          </option>
        ))}
      </select>
    </label>
  );
}
