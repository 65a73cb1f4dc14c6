import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Transporter } from "nodemailer";
import type { Db } from "../db/db.js";
import {
  skipDeathEmails,
  openDigests,
  takeDueDigests,
  digestContents,
  finishDigest,
  retryDigest,
  type DigestContents,
  type TakenDigest,
} from "../db/queries/digests.js";
import { metrics } from "../metrics.js";

// delivery.dead alerts by e-mail: at most one e-mail per destination per clock hour (UTC),
// listing the deliveries that died since the last one. A death with no digest this hour opens
// one after a short gathering pause (so a burst arrives as one e-mail); deaths after that wait
// for the next hour's. Crash- and multi-process safe (queries/digests.ts): the (destination,
// hour) key is the claim, the send happens outside any transaction under a lease, and a failed
// send is retried with back-off. The one repeat possible: a worker that dies after the SMTP
// server took the e-mail and before recording it (its lease runs out and the digest goes again).

/** Deaths listed by name in one e-mail; the rest are counted. */
const LISTED = 20;
/** Digests taken per transaction. */
const BATCH = 10;
/** Longer than nodemailer's longest timeout (10 min idle socket): a slow send is never taken over and sent twice. */
const LEASE_SECONDS = 15 * 60;
const MAX_ATTEMPTS = 10;

/** Wait after the `attempts`-th failed send: 5 s doubling to 5 min (about 20 minutes of SMTP outage over 10 attempts). */
export function digestRetrySeconds(attempts: number): number {
  return Math.min(300, 5 * 2 ** Math.max(0, attempts - 1));
}

export class DigestMailer {
  private readonly gatherSeconds: number;

  constructor(
    private readonly db: Db,
    private readonly mailer: Transporter | null,
    private readonly opts: { from: string; gatherMs?: number | undefined },
    private readonly log: Logger,
  ) {
    this.gatherSeconds = (opts.gatherMs ?? 30_000) / 1000;
  }

  /** Skips what nobody is to be mailed about, opens the digests now due, and sends them. */
  async pass(): Promise<void> {
    await this.db.tx(async (q) => {
      await skipDeathEmails(q, this.mailer === null);
      if (this.mailer) await openDigests(q, this.gatherSeconds);
    });
    for (;;) {
      const leaseToken = randomUUID();
      const { taken, toSend } = await this.db.tx(async (q) => {
        const taken = await takeDueDigests(q, leaseToken, LEASE_SECONDS, BATCH);
        const toSend: { d: TakenDigest; c: DigestContents }[] = [];
        for (const d of taken) {
          const c = await digestContents(q, d, LISTED);
          // SMTP or the address went away since it opened, or its alerts were skipped meanwhile.
          if (!this.mailer || !c.alert_email || c.deaths === 0) await finishDigest(q, d, leaseToken, "skipped", c.deaths, null);
          else toSend.push({ d, c });
        }
        return { taken: taken.length, toSend };
      });
      // Outside any transaction: a slow SMTP server holds no row locks (nor all of PGlite).
      for (const { d, c } of toSend) await this.send(d, c, leaseToken);
      if (taken < BATCH) break;
    }
  }

  private async send(d: TakenDigest, c: DigestContents, leaseToken: string): Promise<void> {
    const ids = { tenant_id: d.tenant_id, destination_id: d.destination_id, deaths: c.deaths, attempts: d.attempts };
    try {
      await this.mailer!.sendMail({ from: this.opts.from, to: c.alert_email!, subject: digestSubject(c), text: digestText(d, c) });
    } catch (err) {
      const message = (err as Error).message;
      metrics.alertEmails.inc({ outcome: "failed" });
      this.log.warn({ err, ...ids }, "delivery.dead digest e-mail failed");
      await this.db.tx(async (q) => {
        if (d.attempts >= MAX_ATTEMPTS) await finishDigest(q, d, leaseToken, "failed", c.deaths, message);
        else await retryDigest(q, d, leaseToken, digestRetrySeconds(d.attempts), message);
      });
      return;
    }
    metrics.alertEmails.inc({ outcome: "sent" });
    await this.db.tx((q) => finishDigest(q, d, leaseToken, "sent", c.deaths, null));
    this.log.debug(ids, "delivery.dead digest e-mailed");
  }
}

function plural(n: number): string {
  return `${n} ${n === 1 ? "delivery" : "deliveries"}`;
}

export function digestSubject(c: DigestContents): string {
  return `[Sluice] ${plural(c.deaths)} to ${c.destination_name || c.url || "a deleted destination"} died`;
}

export function digestText(d: TakenDigest, c: DigestContents): string {
  const first = c.first_at?.toISOString() ?? "?";
  const last = c.last_at?.toISOString() ?? "?";
  const more = c.deaths - c.listed.length;
  return [
    `Destination: ${c.destination_name ? `${c.destination_name} ` : ""}(${d.destination_id})`,
    ...(c.url ? [`URL: ${c.url}`] : []),
    `${plural(c.deaths)} died — every retry spent — ${first === last ? `at ${first}` : `between ${first} and ${last}`}:`,
    "",
    ...c.listed.map(
      (p) => `- ${p.event_type}  ${p.delivery_id}  (event ${p.event_id}, ${p.attempts} attempts): ${p.last_error ?? "no error recorded"}`,
    ),
    ...(more > 0 ? [`…and ${more} more: GET /v1/deliveries?destination_id=${d.destination_id}&status=dead`] : []),
    "",
    "Sluice will not try these again by itself. Retry one with POST /v1/deliveries/{id}/retry once the endpoint is fixed.",
    "This is at most one e-mail per destination per hour: deliveries that die after it are listed in the next.",
  ].join("\n");
}
