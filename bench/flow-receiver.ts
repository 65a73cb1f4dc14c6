// Receiver for bench/flow-accuracy.ts: answers 200 at once and records arrival times per path;
// sends them to the parent on request.
import http from "node:http";

const arrivals = new Map<string, number[]>();
const server = http.createServer((req, res) => {
  const t = Date.now();
  req.resume();
  req.on("end", () => {
    const path = req.url ?? "/";
    let list = arrivals.get(path);
    if (!list) arrivals.set(path, (list = []));
    list.push(t);
    res.end("ok");
  });
});
server.keepAliveTimeout = 600_000;
server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as { port: number }).port }));
process.on("message", (m: string) => {
  if (m === "count") process.send!({ count: [...arrivals.values()].reduce((a, l) => a + l.length, 0) });
  if (m === "dump") process.send!({ arrivals: Object.fromEntries(arrivals) });
});
