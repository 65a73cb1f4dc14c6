import type { Logger } from "pino";
import nodemailer, { type Transporter } from "nodemailer";
import type { Db, Queryable } from "../db/db.js";
import { isStoreUnavailable } from "../db/db.js";
import {
  insertAlerts,
  lockUnpublishedAlerts,
  markAlertPublished,
  lockPendingAlertEmails,
  markAlertEmailSkipped,
  markAlertEmailSent,
  markAlertEmailFailed,
  type AlertType,
  type AlertPayload,
  type PendingAlert,
} from "../db/queries/alerts.js";
import { newId } from "../ids.js";
import { publishEvents, RoutingCache } from "../events/publish.js";
import { metrics } from "../metrics.js";

// Alerts on destination health transitions. Written as rows in the same transaction as the
// transition (an outbox), then published as destination.* events into the tenant's own stream
// and e-mailed to the tenant's alert address. A crash between the two loses nothing: the rows
// stay pending until a worker finishes them.

export interface AlertInput {
  tenantId: string;
  destinationId: string;
  type: AlertType;
  payload: AlertPayload;
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

/** Records alerts in the caller's transaction. */
export async function recordAlerts(q: Queryable, alerts: AlertInput[]): Promise<void> {
  if (alerts.length === 0) return;
  await insertAlerts(
    q,
    alerts.map((a) => ({ id: newId("alr"), ...a })),
  );
  for (const a of alerts) metrics.alerts.inc({ type: a.type });
}

export interface AlertSenderOptions {
  smtpUrl: string | undefined;
  smtpFrom: string;
  maxPayloadBytes: number;
  /** How often to look for alerts left pending (a crash, an SMTP outage); default 2 s. */
  pollMs?: number;
  /** Called after alert events were published (their deliveries want a dispatcher). */
  onPublished?: () => Promise<void>;
}

const MAX_EMAIL_ATTEMPTS = 10;

/** Finishes pending alerts: publishes each as one event, and e-mails it when SMTP is set up. */
export class AlertSender {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private readonly mailer: Transporter | null;
  private readonly routing = new RoutingCache();

  constructor(
    private readonly db: Db,
    private readonly opts: AlertSenderOptions,
    private readonly log: Logger,
  ) {
    this.mailer = opts.smtpUrl ? nodemailer.createTransport(opts.smtpUrl) : null;
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
        const [ev] = await publishEvents(q, a.tenant_id, [{ type: a.type, payload: a.payload }], {
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
    default:
      return `[Sluice] Deliveries to ${name} are failing (health ${p.health.status})`;
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
    "",
    a.type === "destination.paused"
      ? "Nothing is lost: deliveries are held while the destination is paused. Fix the endpoint, then resume it with POST /v1/destinations/{id}/resume (or wait: a destination paused for a server error or timeout is probed and resumes by itself)."
      : "",
  ].join("\n");
}
