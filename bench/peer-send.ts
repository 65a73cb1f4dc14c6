// What both peer senders (graphile-worker, pg-boss) do per delivery, written once so the two
// spend the same work: a signed undici POST like Sluice's (same body shape, Standard Webhooks
// headers, one signing key per destination, a keep-alive Agent with unlimited connections per
// origin and no pipelining, as Sluice's sender).
import { createHmac, randomBytes } from "node:crypto";
import { Agent, request } from "undici";

/** One delivery as a peer's job carries it. */
export interface PeerDelivery {
  url: string;
  /** The event id, sent as webhook-id (the same on every retry). */
  id: string;
  type: string;
  timestamp: string;
  dest: number;
  data: unknown;
}

/** The job for one published bench event. */
export function peerDelivery(url: string, e: { dest: number; seq: number; sentAt: number }, id: string): PeerDelivery {
  return {
    url,
    id,
    type: "bench.event",
    timestamp: new Date(e.sentAt).toISOString(),
    dest: e.dest,
    data: { seq: e.seq, dest: e.dest, sent_at: e.sentAt },
  };
}

const agent = new Agent({ keepAliveTimeout: 60_000, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
const TIMEOUT_MS = 15_000; // Sluice's default timeout_seconds
const keys = new Map<number, Buffer>();

/** POSTs one delivery; throws on a non-2xx answer (the peer's queue then retries it). */
export async function sendSigned(p: PeerDelivery, userAgent: string): Promise<void> {
  const body = `{"type":${JSON.stringify(p.type)},"timestamp":"${p.timestamp}","data":${JSON.stringify(p.data)}}`;
  const ts = Math.floor(Date.now() / 1000);
  if (!keys.has(p.dest)) keys.set(p.dest, randomBytes(24));
  const sig = createHmac("sha256", keys.get(p.dest)!).update(`${p.id}.${ts}.${body}`).digest("base64");
  const res = await request(p.url, {
    method: "POST",
    dispatcher: agent,
    body,
    signal: AbortSignal.timeout(TIMEOUT_MS),
    headers: {
      "content-type": "application/json",
      "user-agent": userAgent,
      "webhook-id": p.id,
      "webhook-timestamp": String(ts),
      "webhook-signature": `v1,${sig}`,
    },
  });
  // Read the (small) answer so the connection is reused, as Sluice keeps 1 KiB of it.
  const answer = await res.body.text();
  if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode}: ${answer.slice(0, 200)}`);
}

/** Closes the keep-alive sockets (on the peer's stop). */
export function closePeerAgent(): Promise<void> {
  return agent.close().catch(() => undefined);
}
