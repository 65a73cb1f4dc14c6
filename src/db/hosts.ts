import pg from "pg";

// Several Postgres hosts in one URL, as libpq takes them, for a primary with standbys:
//
//   postgres://user:password@db-a:5432,db-b:5432/sluice?target_session_attrs=read-write
//
// node-postgres connects to one host only. So for such a URL the pool and the LISTEN session get a
// Client class of their own (pg.Pool's `Client` option): each new connection goes to the host
// that suited last, and when none is known (at start, or once it failed or turned read-only) the
// hosts are tried in the URL's order, as libpq does, and the first that suits is kept (libpq
// starts from the first host on every connection: remembering spares each new connection the
// wait on a dead host listed first). A Client cannot connect twice, so that search uses
// short-lived connections of its own and the real one follows to the host it found: a few more
// connections per failover, none in between. Whether a host suits is read from what Postgres
// reports at login (in_hot_standby and default_transaction_read_only, Postgres 14+), so the
// check costs no round trip.
//
// A URL with one host and no target_session_attrs is passed to node-postgres unchanged.

/** True when `url` names several hosts (a comma before the path). */
export function hasHostList(url: string): boolean {
  return /^[a-z]+:\/\/[^/?#]*,/i.test(url);
}

/** libpq's target_session_attrs, the values that suit a store Sluice writes to. */
export type TargetSessionAttrs = "any" | "read-write" | "primary";

export interface PostgresHost {
  /** A name, an address (IPv6 without brackets) or a socket directory; percent-decoded. */
  host: string;
  port: number;
}

export interface PostgresUrl {
  hosts: PostgresHost[];
  /** As given; undefined when the URL has none (libpq then takes any host that answers). */
  targetSessionAttrs: TargetSessionAttrs | undefined;
  /**
   * The URL with its first host only and without target_session_attrs: the user, password,
   * database and other parameters that every host is connected with.
   */
  baseUrl: string;
}

const DEFAULT_PORT = 5432;
const ATTRS: readonly string[] = ["any", "read-write", "primary"];
const EXPECTED = "expected postgres://user:password@host:5432,host2:5432/database";

/**
 * Splits a libpq-style URL into its hosts. Throws an Error whose message says what is wrong
 * without repeating the URL (it may hold a password).
 */
export function parsePostgresUrl(raw: string): PostgresUrl {
  const m = /^(postgres(?:ql)?):\/\/([^/?#]*)(.*)$/is.exec(raw);
  if (!m) throw new Error(`is not a postgres:// or postgresql:// URL; ${EXPECTED}`);
  const [, scheme, authority = "", rest = ""] = m;
  // The user and password end at the authority's last @: an @ in a password must be %40 anyway.
  const at = authority.lastIndexOf("@");
  const userinfo = at === -1 ? "" : authority.slice(0, at + 1);
  const entries = authority.slice(at + 1).split(",");
  const hosts = entries.map((e, i) => hostOf(e, entries.length > 1 ? `host ${i + 1} of ${entries.length}` : "the host"));

  const hash = rest.indexOf("#");
  const beforeHash = hash === -1 ? rest : rest.slice(0, hash);
  const q = beforeHash.indexOf("?");
  const path = q === -1 ? beforeHash : beforeHash.slice(0, q);
  const params = new URLSearchParams(q === -1 ? "" : beforeHash.slice(q + 1));
  const attrs = params.get("target_session_attrs") ?? undefined;
  if (attrs !== undefined && !ATTRS.includes(attrs)) {
    throw new Error(
      `target_session_attrs=${attrs.slice(0, 40)} is not one Sluice can use: it writes, so any, read-write or primary ` +
        "(read-write: the first host that accepts writes, which is what a primary with standbys needs)",
    );
  }
  params.delete("target_session_attrs");
  const query = params.size > 0 ? `?${params.toString()}` : "";
  const baseUrl = `${scheme}://${userinfo}${entries[0]}${path}${query}`;
  try {
    new URL(baseUrl);
  } catch {
    throw new Error(`is not a URL; ${EXPECTED} (characters such as @ : / # in the password must be percent-encoded, e.g. @ as %40)`);
  }
  return { hosts, targetSessionAttrs: attrs as TargetSessionAttrs | undefined, baseUrl };
}

/** `host`, `host:port`, `[v6]` or `[v6]:port`; a missing port is 5432. */
function hostOf(entry: string, which: string): PostgresHost {
  const m = /^\[([^\]]*)\](?::(.*))?$/.exec(entry) ?? /^([^:[\]]*)(?::(.*))?$/.exec(entry);
  if (!m) throw new Error(`${which} is not host, host:port or [IPv6 address]:port`);
  const [, name = "", portText] = m;
  let host: string;
  try {
    host = decodeURIComponent(name);
  } catch {
    throw new Error(`${which} has a % that is not followed by two hex digits`);
  }
  // One empty host is node-postgres's default (localhost, or ?host=); in a list each must be named.
  if (host === "" && which !== "the host") throw new Error(`${which} is empty`);
  if (portText === undefined || portText === "") return { host, port: DEFAULT_PORT };
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port < 1 || port > 65535) throw new Error(`${which}: the port must be a number from 1 to 65535`);
  return { host, port };
}

/** `db-a:5432,[::1]:5433`, for messages and logs (never the user or password). */
export function describeHosts(hosts: PostgresHost[]): string {
  return hosts.map((h) => `${h.host.includes(":") ? `[${h.host}]` : h.host}:${h.port}`).join(",");
}

/**
 * A host that answered but is not what target_session_attrs asks for (a standby, or read-only).
 * The store is as unavailable as when the host is down: another host may take over.
 */
export class HostRoleError extends Error {
  constructor(
    readonly host: string,
    readonly problem: string,
  ) {
    super(`${host} ${problem}`);
    this.name = "HostRoleError";
  }
}

/** What a pg.Pool or pg.Client is made with for a URL: the URL itself, and the Client class that picks hosts (when several). */
export interface ConnectionTarget {
  connectionString: string;
  Client?: typeof pg.Client;
}

/**
 * The connection options for `url`. One host without target_session_attrs: the URL as it is.
 * Otherwise a Client class that picks the host, shared by every connection made from this target
 * (the pool's and the listener's), so that what one connection learns the next one uses.
 */
export function connectionTarget(url: string, opts: { connectTimeoutMs: number }): ConnectionTarget {
  if (!hasHostList(url) && !/[?&]target_session_attrs=/.test(url)) return { connectionString: url };
  const parsed = parsePostgresUrl(url);
  return { connectionString: parsed.baseUrl, Client: hostPickingClient(parsed, opts.connectTimeoutMs) };
}

/** What a connection's login reported; `problem` says why it does not suit, or null. */
function roleProblem(attrs: TargetSessionAttrs, reported: { standby: boolean; readOnly: boolean }): string | null {
  if (attrs === "any") return null;
  if (reported.standby) return "is a standby (in hot standby), and target_session_attrs asks for a primary";
  if (attrs === "read-write" && reported.readOnly) return "is read-only (default_transaction_read_only = on)";
  return null;
}

function hostPickingClient(url: PostgresUrl, connectTimeoutMs: number): typeof pg.Client {
  const attrs = url.targetSessionAttrs ?? "any";
  /** Index of the host that suited last; null when the next connect must look. */
  let current: number | null = null;
  let search: Promise<number> | null = null;

  const forget = (i: number) => {
    if (current === i) current = null;
  };
  const pick = (): Promise<number> => {
    if (current !== null) return Promise.resolve(current);
    search ??= find().finally(() => (search = null));
    return search;
  };
  /** The first host, in the URL's order, that a connection suits; an AggregateError of each host's failure when none does. */
  const find = async (): Promise<number> => {
    const failures: unknown[] = [];
    const refused: unknown[] = [];
    for (let i = 0; i < url.hosts.length; i++) {
      const probe = new HostPickingClient({ connectionString: url.baseUrl, connectionTimeoutMillis: connectTimeoutMs }, i);
      probe.on("error", () => undefined); // a failure shows as the rejected connect
      try {
        await probe.connect();
        current = i;
        return i;
      } catch (err) {
        // A refused login or a missing database: on one host of several it may be passing (a
        // standby still replaying the CREATE DATABASE a moment ago), so that host does not suit
        // now; refused by every host, it is said as it is, as for one host.
        const code = (err as { code?: unknown }).code;
        if (typeof code === "string" && (code.startsWith("28") || code === "3D000")) {
          refused.push(err);
          failures.push(new HostRoleError(describeHosts([url.hosts[i]!]), `refused the session: ${(err as Error).message}`));
        } else {
          failures.push(err);
        }
      } finally {
        await probe.end().catch(() => undefined);
      }
    }
    if (refused.length === url.hosts.length) throw refused[0];
    throw new AggregateError(failures, `no host of ${describeHosts(url.hosts)} suits target_session_attrs=${attrs}`);
  };

  class HostPickingClient extends pg.Client {
    /** The host this client is on, once chosen. */
    private hostIndex: number | undefined;
    private readonly reported = new Map<string, string>();

    /** `pinned`: a probe of that host, which neither picks nor forgets. */
    constructor(
      config?: string | pg.ClientConfig,
      private readonly pinned?: number,
    ) {
      super(config);
      this.connection.on("parameterStatus", (m: { parameterName: string; parameterValue: string }) =>
        this.reported.set(m.parameterName, m.parameterValue),
      );
      // A write refused as read-only (25006): the host was demoted or set read-only under this
      // session. The store layer discards the connection; the next one looks for the host again.
      this.connection.on("errorMessage", (m: { code?: string }) => {
        if (m.code === "25006" && this.hostIndex !== undefined && this.pinned === undefined) forget(this.hostIndex);
      });
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
    override connect(callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): Promise<pg.Client> | void {
      const done = this.connectToPicked().then(() => this);
      if (!callback) return done;
      const cb = callback as (err: Error | null, c?: pg.Client) => void;
      done.then((c) => cb(null, c), cb);
    }

    private async connectToPicked(): Promise<void> {
      const i = this.pinned ?? (await pick());
      const { host, port } = url.hosts[i]!;
      // node-postgres reads these when it opens the socket (and for a password function or
      // .pgpass); the rest of the settings are the same for every host. A lone empty host keeps
      // node-postgres's own choice (?host=, or localhost).
      if (host !== "") {
        this.host = host;
        this.port = port;
        Object.assign((this as unknown as { connectionParameters: object }).connectionParameters, { host, port });
      }
      this.hostIndex = i;
      try {
        await super.connect();
      } catch (err) {
        if (this.pinned === undefined) forget(i);
        throw err;
      }
      const problem = roleProblem(attrs, await this.role());
      if (problem === null) return;
      if (this.pinned === undefined) forget(i);
      await this.end().catch(() => undefined);
      throw new HostRoleError(describeHosts([url.hosts[i]!]), problem);
    }

    /** Standby or read-only, from the login's report; asked when the server does not report them (before Postgres 14). */
    private async role(): Promise<{ standby: boolean; readOnly: boolean }> {
      const standby = this.reported.get("in_hot_standby");
      const readOnly = this.reported.get("default_transaction_read_only");
      if (attrs === "any") return { standby: false, readOnly: false };
      if (standby !== undefined && readOnly !== undefined) return { standby: standby === "on", readOnly: readOnly === "on" };
      const r = await this.query<{ standby: boolean; read_only: string }>(
        "SELECT pg_is_in_recovery() AS standby, current_setting('transaction_read_only') AS read_only",
      );
      return { standby: r.rows[0]?.standby === true, readOnly: r.rows[0]?.read_only === "on" };
    }
  }
  return HostPickingClient;
}
