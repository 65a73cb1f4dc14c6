import { render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import type { PortalSession } from "./api.js";
import { Session, type SessionContext } from "./context.js";
import { clientFor, loadCredentials, saveCredentials, SluiceApiError, takeTokenFromUrl, type Credentials } from "./session.js";
import { useRoute } from "./router.js";
import { Layout } from "./components/layout.js";
import { SignIn, TenantPicker } from "./pages/signin.js";
import { DestinationsPage } from "./pages/destinations.js";
import { DestinationPage } from "./pages/destination.js";
import { EventsPage, EventPage } from "./pages/events.js";
import { DeliveriesPage, DeliveryPage } from "./pages/deliveries.js";
import { OverviewPage } from "./pages/overview.js";
import { ErrorNote, Loading } from "./components/common.js";

// The dashboard (/) and the consumer portal (/portal): one app. The portal signs in with the
// token of its link and sees only what its session allows; the API enforces that, the page only
// hides what would be refused.

const THEME_VARS: Record<string, string> = {
  accent: "--accent",
  background: "--bg",
  surface: "--surface",
  text: "--text",
  font_family: "--font",
};

function applyTheme(theme: Record<string, string> | null): void {
  for (const [k, v] of Object.entries(theme ?? {})) {
    const name = THEME_VARS[k];
    if (name) document.documentElement.style.setProperty(name, v);
  }
}

const isPortalPage = () => location.pathname.replace(/\/+$/, "") === "/portal";

function App() {
  const [creds, setCreds] = useState<Credentials | null>(() => {
    const token = takeTokenFromUrl();
    if (token) saveCredentials({ token, kind: "portal" });
    return loadCredentials();
  });
  const [portal, setPortal] = useState<PortalSession | null>(null);
  const [notice, setNotice] = useState<string>();
  const [fatal, setFatal] = useState<unknown>(null);

  const signOut = (why?: string) => {
    saveCredentials(null);
    setCreds(null);
    setPortal(null);
    setNotice(why);
  };
  const signIn = (c: Credentials) => {
    saveCredentials(c);
    setCreds(c);
    setNotice(undefined);
  };

  useEffect(() => {
    if (creds?.kind !== "portal") return;
    clientFor(creds)
      .get("/v1/portal-session")
      .then(
        (p) => {
          applyTheme(p.theme);
          setPortal(p);
        },
        (e: unknown) => {
          if (e instanceof SluiceApiError && e.status === 401) signOut("This portal link has expired. Ask for a new one.");
          else setFatal(e);
        },
      );
  }, [creds]);

  const session = useMemo<SessionContext | null>(() => {
    if (!creds) return null;
    // A key deleted or a link expired while the page is open: back to the sign-in, saying why.
    const unauthorized = (res: Response) =>
      void res.json().then(
        (b: { error?: { message?: string } }) => signOut(b.error?.message ?? "Signed out: the key is no longer accepted."),
        () => signOut("Signed out: the key is no longer accepted."),
      );
    return {
      creds,
      client: clientFor(creds, unauthorized),
      portal,
      canWrite: !(portal?.read_only ?? false),
      signOut,
    };
  }, [creds, portal]);

  if (!creds || !session) {
    if (isPortalPage()) {
      return (
        <main class="signin">
          <h1>Webhook deliveries</h1>
          <p role="alert">{notice ?? "This page opens from a portal link. Ask the service that sent you here for a new link."}</p>
        </main>
      );
    }
    return <SignIn onSignedIn={signIn} notice={notice} />;
  }
  if (fatal) return <ErrorNote error={fatal} />;
  if (creds.kind === "portal" && !portal) return <Loading what="your portal" />;
  if (creds.kind === "admin" && !creds.tenantId) return <TenantPicker creds={creds} onPick={signIn} onSignOut={() => signOut()} />;
  return (
    <Session.Provider value={session}>
      <Routes onSwitchTenant={(tenantId) => signIn({ ...creds, tenantId })} />
    </Session.Provider>
  );
}

function Routes({ onSwitchTenant }: { onSwitchTenant: (id: string) => void }) {
  const route = useRoute();
  const [first, id] = route.segments;
  let page;
  if (first === "destinations" && id) page = <DestinationPage id={id} />;
  else if (first === "events" && id) page = <EventPage id={id} />;
  else if (first === "events") page = <EventsPage />;
  else if (first === "deliveries" && id) page = <DeliveryPage id={id} />;
  else if (first === "deliveries") page = <DeliveriesPage />;
  else if (first === "overview") page = <OverviewPage />;
  else page = <DestinationsPage />;
  return (
    <Layout active={first ?? "destinations"} onSwitchTenant={onSwitchTenant}>
      {page}
    </Layout>
  );
}

render(<App />, document.getElementById("app")!);
