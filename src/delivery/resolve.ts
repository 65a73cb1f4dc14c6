// Resolving destination host names without libuv's thread pool.
//
// dns.lookup (getaddrinfo) runs on that pool: four threads by default, shared with file, zlib and
// crypto work. A name whose nameservers never answer holds a thread for as long as the system
// resolver retries (10 s and more), so a tenant with four such destinations would stall every new
// connection in the worker, every other tenant's included. c-ares (dns.Resolver) asks the same
// nameservers (/etc/resolv.conf, or SLUICE_DNS_SERVERS) asynchronously, with its own timeout: a
// slow name costs a timer and a socket, and nobody else waits for it.
//
// What DNS has no record of but the system may know — /etc/hosts, a short name the search list
// completes, mDNS — goes to dns.lookup after all, only where the network policy admits addresses
// outside the public internet (such names point inside), one lookup per name at a time and at
// most SYSTEM_LOOKUPS at once, so the pool always has threads for everything else.

import dns from "node:dns";
import type { LookupAddress } from "node:dns";

export type Answer = (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void;
/** Every address of `hostname` of `family` (0: both, IPv4 first). */
export type ResolveName = (hostname: string, family: 0 | 4 | 6, callback: Answer) => void;
/** dns.lookup with `all: true`; tests stand in one that counts or waits. */
export type SystemLookup = (hostname: string, options: { family: 0 | 4 | 6; all: true }, callback: Answer) => void;

export interface ResolverOptions {
  /** Nameservers (`ip` or `ip:port`, IPv6 as `[ip]:port`); empty: the system's. */
  servers: readonly string[];
  /** Ask the system resolver for names DNS does not know (see the header). */
  systemFallback: boolean;
  systemLookup?: SystemLookup;
  /** Per try, ms; c-ares doubles it for each further try. */
  timeoutMs?: number;
  tries?: number;
}

// How long an answered family waits for the other (Happy Eyeballs' resolution delay, RFC 8305).
const RESOLUTION_DELAY_MS = 50;
/** Most dns.lookup calls running at once: half the default pool. */
export const SYSTEM_LOOKUPS = 2;
// The system's nameservers are read again this often, as getaddrinfo notices a new resolv.conf.
const REREAD_MS = 60_000;
// Answers that mean "DNS has no such name or record", as opposed to "DNS did not answer".
const NOT_IN_DNS: ReadonlySet<string> = new Set([dns.NOTFOUND, dns.NODATA, dns.BADNAME, dns.NONAME, dns.BADFAMILY]);

const defaultLookup: SystemLookup = (hostname, options, callback) => dns.lookup(hostname, options, callback);

export function createResolver(opts: ResolverOptions): ResolveName {
  const timeout = opts.timeoutMs ?? 2500;
  const tries = opts.tries ?? 2;
  let resolver: dns.Resolver | null = null;
  let madeAt = 0;
  const current = (): dns.Resolver => {
    const now = Date.now();
    if (resolver === null || (opts.servers.length === 0 && now - madeAt > REREAD_MS)) {
      resolver = new dns.Resolver({ timeout, tries });
      if (opts.servers.length > 0) resolver.setServers([...opts.servers]);
      madeAt = now;
    }
    return resolver;
  };
  const system = systemLookups(opts.systemLookup ?? defaultLookup);

  return (hostname, family, callback) => {
    const local = loopbackAnswer(hostname, family);
    if (local !== null) return void queueMicrotask(() => callback(null, local));
    const r = current();
    const ask = (f: 4 | 6): Promise<LookupAddress[]> =>
      new Promise((resolve, reject) => {
        const done = (err: NodeJS.ErrnoException | null, addresses: string[]) =>
          err ? reject(err) : resolve(addresses.map((address) => ({ address, family: f })));
        if (f === 4) r.resolve4(hostname, done);
        else r.resolve6(hostname, done);
      });
    const families: (4 | 6)[] = family === 0 ? [4, 6] : [family];
    const got: (LookupAddress[] | NodeJS.ErrnoException | undefined)[] = families.map(() => undefined);
    let grace: NodeJS.Timeout | null = null;
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      if (grace !== null) clearTimeout(grace);
      const addresses = got.flatMap((g) => (Array.isArray(g) ? g : []));
      if (addresses.length > 0) return callback(null, addresses);
      const unanswered = got.find((g): g is NodeJS.ErrnoException => g instanceof Error && !NOT_IN_DNS.has(g.code ?? ""));
      if (unanswered) return callback(didNotAnswer(hostname, unanswered), []);
      if (opts.systemFallback) return system(hostname, family, callback);
      callback(notFound(hostname), []);
    };
    families.forEach((f, i) => {
      const settle = (g: LookupAddress[] | NodeJS.ErrnoException): void => {
        got[i] = g;
        if (got.every((x) => x !== undefined)) finish();
        // One family answered: the other gets a moment, not its whole timeout (some servers
        // never answer AAAA queries).
        else if (Array.isArray(g) && g.length > 0) grace ??= setTimeout(finish, RESOLUTION_DELAY_MS);
      };
      ask(f).then(settle, settle);
    });
  };
}

/** `localhost` and `*.localhost` are loopback by definition (RFC 6761): no resolver is asked. */
function loopbackAnswer(hostname: string, family: 0 | 4 | 6): LookupAddress[] | null {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  if (name !== "localhost" && !name.endsWith(".localhost")) return null;
  const all: LookupAddress[] = [
    { address: "127.0.0.1", family: 4 },
    { address: "::1", family: 6 },
  ];
  return all.filter((a) => family === 0 || a.family === family);
}

/**
 * dns.lookup behind a gate: concurrent lookups of one name share one call (its answer is passed
 * to each, never kept), and at most SYSTEM_LOOKUPS calls run at once; the rest wait their turn.
 */
function systemLookups(lookup: SystemLookup): ResolveName {
  const waiting = new Map<string, Answer[]>();
  const queue: (() => void)[] = [];
  let running = 0;
  const next = (): void => {
    while (running < SYSTEM_LOOKUPS && queue.length > 0) {
      running++;
      queue.shift()!();
    }
  };
  return (hostname, family, callback) => {
    const key = `${family}:${hostname}`;
    const joined = waiting.get(key);
    if (joined) return void joined.push(callback);
    waiting.set(key, [callback]);
    const settle: Answer = (err, addresses) => {
      const callbacks = waiting.get(key) ?? [];
      waiting.delete(key);
      running--;
      next();
      for (const cb of callbacks) cb(err, addresses);
    };
    queue.push(() => {
      try {
        lookup(hostname, { family, all: true }, settle);
      } catch (err) {
        settle(err as NodeJS.ErrnoException, []);
      }
    });
    next();
  };
}

function notFound(hostname: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`DNS has no address for ${hostname} (ENOTFOUND)`), { code: "ENOTFOUND", hostname });
}

/** DNS did not answer (timeout, SERVFAIL, refused): transient, like getaddrinfo's EAI_AGAIN. */
function didNotAnswer(hostname: string, cause: NodeJS.ErrnoException): NodeJS.ErrnoException {
  return Object.assign(new Error(`DNS lookup of ${hostname} did not complete (${cause.code ?? cause.message}): EAI_AGAIN`), {
    code: "EAI_AGAIN",
    hostname,
    cause,
  });
}
