import { Sluice, SluiceApiError } from "../../sdk/src/index.js";

// Who the page signs in as, kept in sessionStorage (gone when the tab closes; never a cookie, so
// no request is authenticated by the browser on its own). A portal link carries its token in the
// URL fragment (#token=…), which never reaches a server log; it is moved here and wiped from the URL.

export type CredentialKind = "key" | "admin" | "portal";

export interface Credentials {
  token: string;
  kind: CredentialKind;
  /** The admin key acting for this tenant (Sluice-Tenant header). */
  tenantId?: string;
}

const STORE_KEY = "sluice.credentials";
let memory: Credentials | null = null; // when storage is blocked (some embedded frames)

export function loadCredentials(): Credentials | null {
  try {
    const raw = sessionStorage.getItem(STORE_KEY);
    return raw ? (JSON.parse(raw) as Credentials) : memory;
  } catch {
    return memory;
  }
}

export function saveCredentials(c: Credentials | null): void {
  memory = c;
  try {
    if (c) sessionStorage.setItem(STORE_KEY, JSON.stringify(c));
    else sessionStorage.removeItem(STORE_KEY);
  } catch {
    // storage blocked: memory only
  }
}

/** A portal link's token, taken out of the URL's fragment; null when the URL has none. */
export function takeTokenFromUrl(): string | null {
  const m = /^#token=([A-Za-z0-9_-]+)/.exec(location.hash);
  if (!m) return null;
  history.replaceState(null, "", `${location.pathname}${location.search}#/`);
  return m[1]!;
}

/** The SDK client for these credentials; `onUnauthorized` hears of every 401 (an expired link, a deleted key). */
export function clientFor(c: Credentials, onUnauthorized?: (res: Response) => void): Sluice {
  return new Sluice({
    baseUrl: location.origin,
    apiKey: c.token,
    headers: c.kind === "admin" && c.tenantId ? { "sluice-tenant": c.tenantId } : {},
    fetch: async (input: Request) => {
      const res = await fetch(input);
      if (res.status === 401) onUnauthorized?.(res.clone());
      return res;
    },
  });
}

export { SluiceApiError };
