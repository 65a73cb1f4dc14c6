import { useEffect, useState } from "preact/hooks";

// Routes live in the URL's fragment (#/destinations/dst_…): the server serves one page for all,
// and a portal page inside an iframe keeps its place across reloads.

export interface Route {
  path: string;
  segments: string[];
  query: URLSearchParams;
}

function current(): Route {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path = "/", search = ""] = raw.split("?");
  return { path, segments: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(search) };
}

export function useRoute(): Route {
  const [state, setState] = useState(() => ({ hash: location.hash, route: current() }));
  useEffect(() => {
    const on = () => setState({ hash: location.hash, route: current() });
    addEventListener("hashchange", on);
    // The effect runs after the first paint: a fragment that changed in between (a link followed,
    // or a page opened at once after signing in) had no listener to hear it.
    if (location.hash !== state.hash) on();
    return () => removeEventListener("hashchange", on);
  }, []);
  return state.route;
}

export function href(path: string, query?: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v) q.set(k, v);
  const s = q.toString();
  return `#${path}${s ? `?${s}` : ""}`;
}

export function navigate(path: string, query?: Record<string, string | undefined>): void {
  location.hash = href(path, query);
}
