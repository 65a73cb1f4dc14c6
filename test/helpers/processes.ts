import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import { fileURLToPath } from "node:url";

// Real Sluice processes (`sluice worker`, `sluice api`), for tests that kill or multiply them.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface SluiceProcess {
  proc: ChildProcess;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  exited: Promise<number | string>;
  output(): string;
  kill(signal: NodeJS.Signals): void;
}

export function spawnSluice(command: "worker" | "api" | "start", env: Record<string, string>, args: string[] = []): SluiceProcess {
  return spawnCli([command, ...args], { ...process.env, SLUICE_LOG_LEVEL: "warn", SLUICE_ALLOW_PRIVATE_NETWORKS: "1", ...env });
}

/**
 * Runs the CLI with any arguments (`migrate`, `audit rate …`, bad flags) in a clean environment:
 * only PATH, HOME and `env` — no SLUICE_* or DATABASE_URL of the caller's.
 */
export function spawnSluiceCli(args: string[], env: Record<string, string> = {}): SluiceProcess {
  return spawnCli(args, { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", SLUICE_LOG_LEVEL: "warn", ...env });
}

function spawnCli(args: string[], env: NodeJS.ProcessEnv): SluiceProcess {
  const proc = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout.on("data", (c) => (out += c));
  proc.stderr.on("data", (c) => (out += c));
  const exited = new Promise<number | string>((resolve) => proc.on("exit", (code, sig) => resolve(code ?? sig ?? -1)));
  return { proc, exited, output: () => out, kill: (s) => proc.kill(s) };
}

/** A port nothing listens on (free a moment ago). */
export async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}
