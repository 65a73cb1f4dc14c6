import dgram from "node:dgram";
import net from "node:net";

// A nameserver on 127.0.0.1 (UDP) for resolver tests: each A or AAAA question is answered as
// `answer` says — with addresses, with none (NOERROR, no data), as a name that does not exist
// (NXDOMAIN), or never (dropped, as a dead nameserver does).

export type StubReply = { addresses: string[] } | { nxdomain: true } | { drop: true };

export interface DnsStub {
  /** `127.0.0.1:port`, for dns.Resolver.setServers / SLUICE_DNS_SERVERS. */
  server: string;
  queries: { name: string; type: "A" | "AAAA" }[];
  close(): Promise<void>;
}

const TYPES = { 1: "A", 28: "AAAA" } as const;

export async function startDnsStub(answer: (name: string, type: "A" | "AAAA") => StubReply): Promise<DnsStub> {
  const socket = dgram.createSocket("udp4");
  const queries: DnsStub["queries"] = [];
  socket.on("message", (msg, from) => {
    const q = question(msg);
    if (q === null) return;
    const type = TYPES[q.qtype as keyof typeof TYPES];
    if (type === undefined) return void socket.send(reply(msg, q.end, 4, []), from.port, from.address); // NOTIMP
    queries.push({ name: q.name, type });
    const r = answer(q.name, type);
    if ("drop" in r) return;
    const rcode = "nxdomain" in r ? 3 : 0;
    const records = "addresses" in r ? r.addresses.filter((a) => net.isIP(a) === (type === "A" ? 4 : 6)) : [];
    socket.send(reply(msg, q.end, rcode, records), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const { port } = socket.address();
  return {
    server: `127.0.0.1:${port}`,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/** The first question's name (lower case, no trailing dot), type, and where it ends. */
function question(msg: Buffer): { name: string; qtype: number; end: number } | null {
  if (msg.length < 12 || msg.readUInt16BE(4) < 1) return null;
  const labels: string[] = [];
  let at = 12;
  while (at < msg.length && msg[at] !== 0) {
    const len = msg[at]!;
    labels.push(msg.toString("latin1", at + 1, at + 1 + len));
    at += 1 + len;
  }
  if (at + 5 > msg.length) return null;
  return { name: labels.join(".").toLowerCase(), qtype: msg.readUInt16BE(at + 1), end: at + 5 };
}

/** The answer: the query's id and question, `rcode`, and one record per address (TTL 60). */
function reply(query: Buffer, questionEnd: number, rcode: number, addresses: string[]): Buffer {
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // id
  header.writeUInt16BE(0x8000 | (query.readUInt16BE(2) & 0x0100) | 0x0080 | rcode, 2); // QR, RD as asked, RA
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(addresses.length, 6);
  const records = addresses.map((address) => {
    const v4 = net.isIP(address) === 4;
    const data = v4 ? Buffer.from(address.split(".").map(Number)) : ipv6Bytes(address);
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    rr.writeUInt16BE(v4 ? 1 : 28, 2);
    rr.writeUInt16BE(1, 4); // IN
    rr.writeUInt32BE(60, 6);
    rr.writeUInt16BE(data.length, 10);
    return Buffer.concat([rr, data]);
  });
  return Buffer.concat([header, query.subarray(12, questionEnd), ...records]);
}

function ipv6Bytes(address: string): Buffer {
  const [head, tail] = address.split("::") as [string, string | undefined];
  const parts = (s: string | undefined) => (s ? s.split(":").map((h) => parseInt(h, 16)) : []);
  const [h, t] = [parts(head), parts(tail)];
  const groups = tail === undefined ? h : [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(g, i * 2));
  return out;
}
