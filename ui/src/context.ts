import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Sluice } from "../../sdk/src/index.js";
import type { PortalSession } from "./api.js";
import type { Credentials } from "./session.js";

export interface SessionContext {
  creds: Credentials;
  client: Sluice;
  /** Set when signed in through a portal link: what it may see and do. */
  portal: PortalSession | null;
  /** False for read-only portal sessions: actions are hidden. */
  canWrite: boolean;
  signOut: (why?: string) => void;
}

export const Session = createContext<SessionContext | null>(null);

export function useSession(): SessionContext {
  const s = useContext(Session);
  if (!s) throw new Error("useSession outside a signed-in page");
  return s;
}
