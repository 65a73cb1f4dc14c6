import type { Logger } from "pino";
import nodemailer, { type Transporter } from "nodemailer";
import type { Db, Queryable } from "../db/db.js";
import { isStoreUnavailable } from "../db/db.js";
import {
  insertAlerts,
  readDeadDeliveries,
  lockUnpublishedAlerts,
  markAlertPublished,
  lockPendingAlertEmails,
  markAlertEmailSkipped,
  markAlertEmailSent,
  markAlertEmailFailed,
  type AlertType,
  type AlertPayload,
  type DeliveryDeadPayload,
  type PendingAlert,
} from "../db/queries/alerts.js";
import { isSystemEventType } from "../policy/event-match.js";
import { newId } from "../ids.js";
import { publishEvents, RoutingCache } from "../events/publish.js";
import { metrics } from "../metrics.js";
import { DigestMailer } from "./digest.js";

// Alerts on destination health transitions (destination.*) and on deliveries whose retries are
// spent (delivery.dead). Written as rows in the same transaction as the transition or the death
// (an outbox), then published as events into the tenant's own stream and e-mailed to the
// tenant's alert address (deaths in an hourly digest: digest.ts). A crash between the two loses
// nothing: the rows stay pending until a worker finishes them.

/** An alert about a destination (destination.*). */
export interface AlertInput {
  tenantId: string;
  destinationId: string;
  type: AlertType;
  payload: AlertPayload;
}

/** An alert about one delivery's death; the delivery and its attempt count make its dedup key. */
export interface DeathAlertInput {
  tenantId: string;
  destinationId: string;
  type: "delivery.dead";
  payload: DeliveryDeadPayload;
  deliveryId: string;
  deliveryAttempts: number;
}

/** One alert about destination `d` (its tenant, id, name and URL), with the reason and health. */
export function alertInput(
  d: { id: string; tenant_id: string; name: string; url: string },
  type: AlertType,
  reason: string,
  health: AlertPayload["health"],
  extra: Record<string, unknown> = {},
): AlertInput {
  return {
    tenantId: d.tenant_id,
    destinationId: d.id,
    type,
    payload: {
      destination_id: d.id,
      destination_name: d.name,
      url: d.url,
      transition: type.slice("destination.".length),
      reason,
      health,
      at: new Date().toISOString(),
      ...extra,
    },
  };
}

/**
 * The delivery.dead alerts for deliveries the caller's write-back just made dead (read in its
 * transaction). None for a delivery of one of Sluice's own events (destination.*, delivery.dead):
 * a watcher that cannot take them would otherwise be told so in more events it cannot take.
 */
export async function deathAlerts(q: Queryable, died: { destinationId: string; id: string }[]): Promise<DeathAlertInput[]> {
  const rows = await readDeadDeliveries(q, died);
  return rows
    .filter((r) => !isSystemEventType(r.event_type))
    .map((r): DeathAlertInput => ({
      tenantId: r.tenant_id,
      destinationId: r.destination_id,
      type: "delivery.dead",
      deliveryId: r.id,
      deliveryAttempts: r.attempts,
      payload: {
        delivery_id: r.id,
        destination_id: r.destination_id,
        destination_name: r.destination_name,
        event_id: r.event_id,
        event_type: r.event_type,
        occurred_at: r.occurred_at.toISOString(),
        attempts: r.attempts,
        last_error: r.last_error,
        last_status_code: r.last_status_code,
        died_at: r.finished_at.toISOString(),
      },
    }));
}

/**
 * Records alerts in the caller's transaction; a death recorded before (a write-back run again)
 * is not recorded twice. Returns how many were recorded.
 */
export async function recordAlerts(q: Queryable, alerts: (AlertInput | DeathAlertInput)[]): Promise<number> {
  if (alerts.length === 0) return 0;
  const recorded = await insertAlerts(
    q,
    alerts.map((a) => ({ id: newId("alr"), ...a })),
  );
  for (const type of recorded) metrics.alerts.inc({ type });
  return recorded.length;
}

export interface AlertSenderOptions {
  smtpUrl: string | undefined;
  smtpFrom: string;
  maxPayloadBytes: number;
  /** How often to look for alerts left pending (a crash, an SMTP outage); default 2 s. */
  pollMs?: number;
  /** Called after alert events were published (their deliveries want a dispatcher). */
  onPublished?: () => Promise<void>;
  /** How long the first death of a destination waits for more before its digest is mailed; default 30 s. */
  digestGatherMs?: number;
}

const MAX_EMAIL_ATTEMPTS = 10;

/**
 * Finishes pending alerts: publishes each as one event, and e-mails it when SMTP is set up —
 * a destination.* alert alone, delivery.dead ones in their destination's hourly digest.
 */
export class AlertSender {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private readonly mailer: Transporter | null;
  private readonly routing = new RoutingCache();
  private readonly digests: DigestMailer;

  constructor(
    private readonly db: Db,
    private readonly opts: AlertSenderOptions,
    private readonly log: Logger,
  ) {
    this.mailer = opts.smtpUrl ? nodemailer.createTransport(opts.smtpUrl) : null;
    this.digests = new DigestMailer(db, this.mailer, { from: opts.smtpFrom, gatherMs: opts.digestGatherMs }, log);
  }

  start(): void {
    const tick = () => {
      this.kick();
      this.timer = setTimeout(tick, this.opts.pollMs ?? 2000);
      this.timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    this.mailer?.close();
  }

  /** Look now (coalesced: one pass at a time, another right after if asked meanwhile). */
  kick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.pass();
        } catch (err) {
          this.log[isStoreUnavailable(err) ? "debug" : "error"]({ err }, "sending alerts failed; will retry");
        }
      } while (this.again);
    })().finally(() => (this.running = null));
  }

  private async pass(): Promise<void> {
    const published = await this.db.tx(async (q) => {
      const rows = await lockUnpublishedAlerts(q);
      for (const a of rows) {
        // A death is stamped with when it happened, not when it was published.
        const occurred_at = a.type === "delivery.dead" ? (a.payload as DeliveryDeadPayload).died_at : undefined;
        const [ev] = await publishEvents(q, a.tenant_id, [{ type: a.type, payload: a.payload, occurred_at }], {
          maxPayloadBytes: this.opts.maxPayloadBytes,
          system: true,
          routing: this.routing,
        });
        await markAlertPublished(q, a.id, ev!.id);
      }
      return rows.length;
    });
    if (published > 0) await this.opts.onPublished?.();

    for (;;) {
      const sent = await this.db.tx(async (q) => {
        const rows = await lockPendingAlertEmails(q);
        for (const a of rows) await this.email(q, a);
        return rows.length;
      });
      if (sent < 20) break;
    }
    await this.digests.pass();
  }

  private async email(q: Queryable, a: PendingAlert): Promise<void> {
    if (!this.mailer || !a.alert_email) {
      await markAlertEmailSkipped(q, a.id);
      return;
    }
    try {
      await this.mailer.sendMail({ from: this.opts.smtpFrom, to: a.alert_email, subject: subjectOf(a), text: textOf(a) });
      await markAlertEmailSent(q, a.id);
      metrics.alertEmails.inc({ outcome: "sent" });
    } catch (err) {
      const attempts = a.email_attempts + 1;
      const state = attempts >= MAX_EMAIL_ATTEMPTS ? "failed" : "pending";
      await markAlertEmailFailed(q, a.id, state, attempts, (err as Error).message);
      metrics.alertEmails.inc({ outcome: "failed" });
      this.log.warn({ err, alert_id: a.id, attempts }, "alert e-mail failed");
    }
  }
}

function subjectOf(a: PendingAlert): string {
  const p = a.payload;
  const name = p.destination_name || p.url;
  switch (a.type) {
    case "destination.paused":
      return `[Sluice] Deliveries to ${name} are paused`;
    case "destination.resumed":
      return `[Sluice] Deliveries to ${name} have resumed`;
    case "destination.backlog_growing":
      return `[Sluice] The backlog for ${name} keeps growing`;
    case "destination.backlog_stale":
      return `[Sluice] Deliveries to ${name} are waiting too long`;
    case "destination.backlog_recovered":
      return `[Sluice] The backlog for ${name} has recovered`;
    default:
      return `[Sluice] Deliveries to ${name} are failing (health ${p.health.status})`;
  }
}

function advice(type: PendingAlert["type"]): string {
  switch (type) {
    case "destination.paused":
      return "Nothing is lost: deliveries are held while the destination is paused. Fix the endpoint, then resume it with POST /v1/destinations/{id}/resume (or wait: a destination paused for a server error or timeout is probed and resumes by itself).";
    case "destination.backlog_growing":
    case "destination.backlog_stale":
      return "Nothing is lost: the deliveries wait. GET /v1/destinations/{id}/stats shows why they are held (hold reasons), the pace and the outcomes; raise rate_limit or max_concurrency if the endpoint can take more, or look at why it answers slowly.";
    default:
      return "";
  }
}

function textOf(a: PendingAlert): string {
  const p = a.payload;
  return [
    `Destination: ${p.destination_name ? `${p.destination_name} ` : ""}(${p.destination_id})`,
    `URL: ${p.url}`,
    `What happened: ${p.transition} at ${p.at}`,
    `Why: ${p.reason}`,
    `Health: ${p.health.status}, score ${p.health.score}/100, ${p.health.consecutive_failures} consecutive failures`,
    ...(typeof p.queued_events === "number" ? [`Deliveries waiting: ${p.queued_events}`] : []),
    ...(typeof p.oldest_waiting_age_seconds === "number" ? [`Oldest waiting: ${p.oldest_waiting_age_seconds} s`] : []),
    "",
    advice(a.type),
  ].join("\n");
}
