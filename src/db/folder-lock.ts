import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, utimesSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Logger } from "pino";
import { StartupError } from "../errors.js";

// The embedded store (PGlite) has no lock of its own: two processes on one folder corrupt it.
// So the first process writes <dataDir>/sluice.lock (created exclusively) and removes it when it
// stops or exits. A lock left by a process that died is taken over:
// - same host: its pid is not alive (or it predates the last boot, so the pid may be reused);
// - another host (a shared volume, a container with a new hostname): it has not been touched for
//   FOREIGN_STALE_MS, because a live holder touches it every HEARTBEAT_MS.

export const LOCK_FILE = "sluice.lock";
const HEARTBEAT_MS = 10_000;
const FOREIGN_STALE_MS = 60_000;

export interface LockHolder {
  pid: number;
  host: string;
  command: string;
  started_at: string;
  /** Tells this lock from a later one by the same pid (a restarted container is pid 1 again). */
  token?: string;
}

export interface StoreLock {
  readonly path: string;
  /** Removes the lock if it is still ours. Safe to call twice. */
  release(): void;
}

function readHolder(file: string): LockHolder | null {
  try {
    const h = JSON.parse(readFileSync(file, "utf8")) as Partial<LockHolder>;
    return typeof h.pid === "number" ? (h as LockHolder) : null;
  } catch {
    return null; // unreadable or half-written: judged by its age below
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== "ESRCH"; // EPERM: alive, someone else's
  }
}

/** Why the lock's holder is gone, or null if it may still be running. */
function staleReason(file: string, holder: LockHolder | null, now: number): string | null {
  let ageMs: number;
  try {
    ageMs = now - statSync(file).mtimeMs;
  } catch {
    return "it was removed meanwhile";
  }
  if (!holder) return ageMs > FOREIGN_STALE_MS ? "it is unreadable and untouched for over a minute" : null;
  if (holder.host === os.hostname()) {
    if (holder.pid === process.pid) return `it names this process's pid ${holder.pid} (left by an earlier run)`;
    if (!pidAlive(holder.pid)) return `process ${holder.pid} is no longer running`;
    const bootMs = now - os.uptime() * 1000;
    if (Date.parse(holder.started_at) < bootMs) return `process ${holder.pid} started before the last reboot`;
    return null;
  }
  return ageMs > FOREIGN_STALE_MS ? `its holder on ${holder.host} has not touched it for ${Math.round(ageMs / 1000)} s` : null;
}

/**
 * Takes the lock of the embedded store in `dataDir` for `command` (start, api, worker, migrate,
 * audit), or throws SLUICE_STORE_LOCKED naming the process that holds it.
 */
export function acquireStoreLock(dataDir: string, command: string, log?: Logger): StoreLock {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, LOCK_FILE);
  const me: LockHolder = {
    pid: process.pid,
    host: os.hostname(),
    command: `sluice ${command}`,
    started_at: new Date().toISOString(),
    token: randomBytes(8).toString("hex"),
  };
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, "wx");
      try {
        writeSync(fd, JSON.stringify(me) + "\n");
      } finally {
        closeSync(fd);
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = readHolder(file);
    const stale = attempt === 0 ? staleReason(file, holder, Date.now()) : null;
    if (stale === null) {
      const who = holder
        ? `process ${holder.pid} on ${holder.host} ('${holder.command}', started ${holder.started_at})`
        : "another process";
      throw new StartupError("SLUICE_STORE_LOCKED", { dir: path.resolve(dataDir), holder: who });
    }
    // Changed since it was judged: another process is taking it over too; the next round decides.
    if (JSON.stringify(readHolder(file)) !== JSON.stringify(holder)) continue;
    log?.warn({ lock: file, holder }, `taking over a stale lock of the embedded store: ${stale}`);
    try {
      unlinkSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    // Loop once more: if another process took it over first, its fresh lock stops this one.
  }

  const ours = () => readHolder(file)?.token === me.token;
  // Proof of life for a process on another host that finds this lock.
  const heartbeat = setInterval(() => {
    try {
      const t = new Date();
      if (ours()) utimesSync(file, t, t);
    } catch {
      /* the folder went away: nothing to keep alive */
    }
  }, HEARTBEAT_MS).unref();
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    clearInterval(heartbeat);
    process.removeListener("exit", release);
    try {
      if (ours()) unlinkSync(file);
    } catch {
      /* already gone */
    }
  };
  // A process that exits without stopping (process.exit, an uncaught error) still lets go.
  process.on("exit", release);
  return { path: file, release };
}
