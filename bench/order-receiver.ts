// Receiver process for bench/quiet.ts's drain: answers 200 at once and records every request to
// /o/* in arrival order — when it arrived (epoch ms with sub-millisecond precision, taken when its
// headers were parsed, before the body) and the payload's "rank". Its own process, so the bench's
// publishing does not share its event loop.
// IPC in:  {type: "reset"} · {type: "progress"} · {type: "dump"}
// IPC out: {type: "ready", port} · {type: "progress", n, at} · {type: "dump", times, ranks}
import http from "node:http";
import { performance } from "node:perf_hooks";

export type OrderMessage =
  | { type: "ready"; port: number }
  | { type: "progress"; n: number; at: number }
  /** In arrival order; rank -1 = a request whose payload had no "rank". */
  | { type: "dump"; times: number[]; ranks: number[] };

let times: number[] = [];
let ranks: number[] = [];

const RANK = /"rank":(\d+)/;
const now = (): number => performance.timeOrigin + performance.now();

const server = http.createServer((req, res) => {
  const at = now();
  const path = req.url ?? "";
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    if (path.startsWith("/o/")) {
      times.push(at);
      ranks.push(Number(RANK.exec(Buffer.concat(chunks).toString("utf8"))?.[1] ?? -1));
    }
    res.writeHead(path.startsWith("/o/") ? 200 : 404, { "content-type": "text/plain", "content-length": "2" });
    res.end("ok");
  });
});
// Senders keep connections open for the whole run; never be the side that closes them.
server.keepAliveTimeout = 600_000;
server.headersTimeout = 0;
server.requestTimeout = 0;
server.maxRequestsPerSocket = 0;

const send = (m: OrderMessage): void => void process.send?.(m);
process.on("message", (m: { type: string }) => {
  if (m.type === "reset") {
    times = [];
    ranks = [];
    send({ type: "progress", n: 0, at: Date.now() });
  } else if (m.type === "progress") {
    send({ type: "progress", n: times.length, at: Date.now() });
  } else if (m.type === "dump") {
    send({ type: "dump", times, ranks });
  }
});
process.on("disconnect", () => process.exit(0)); // the bench is gone: so are we
process.on("SIGTERM", () => process.exit(0));
server.listen(0, "127.0.0.1", () => {
  const addr = server.address();
  send({ type: "ready", port: typeof addr === "object" && addr !== null ? addr.port : 0 });
});
