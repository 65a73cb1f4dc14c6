// For receivers: checks that a webhook came from Sluice (Standard Webhooks signatures, via the
// `standardwebhooks` package) and returns its message.
import { Webhook, WebhookVerificationError } from "standardwebhooks";

export { Webhook, WebhookVerificationError };

/** What Sluice POSTs: the event's type, its occurred_at and its payload. */
export interface WebhookMessage<T = unknown> {
  /** The event id (`webhook-id`): the same on every retry, so use it to drop repeats. */
  id: string;
  type: string;
  timestamp: string;
  data: T;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string {
  const v = headers instanceof Headers ? headers.get(name) : (headers[name] ?? headers[name.toLowerCase()]);
  return Array.isArray(v) ? (v[0] ?? "") : (v ?? "");
}

/**
 * Verifies a delivery and returns its message; throws WebhookVerificationError when no secret
 * matches or the timestamp is more than five minutes off. Pass the raw body exactly as received
 * (not re-serialized JSON). While a secret rotates, pass both: `secret: [current, previous]`.
 */
export function verifyWebhook<T = unknown>(opts: {
  secret: string | string[];
  body: string | Buffer;
  headers: HeaderSource;
}): WebhookMessage<T> {
  const signed = {
    "webhook-id": header(opts.headers, "webhook-id"),
    "webhook-timestamp": header(opts.headers, "webhook-timestamp"),
    "webhook-signature": header(opts.headers, "webhook-signature"),
  };
  const secrets = Array.isArray(opts.secret) ? opts.secret : [opts.secret];
  let last: unknown = new WebhookVerificationError("No secret given");
  for (const secret of secrets) {
    try {
      const msg = new Webhook(secret).verify(opts.body, signed) as Omit<WebhookMessage<T>, "id">;
      return { id: signed["webhook-id"], type: msg.type, timestamp: msg.timestamp, data: msg.data };
    } catch (err) {
      last = err;
    }
  }
  throw last;
}
