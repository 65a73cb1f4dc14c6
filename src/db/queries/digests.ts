import type { Queryable } from "../db.js";
import type { DeliveryDeadPayload } from "./alerts.js";
import { NOW } from "./sql-time.js";

// The hourly e-mail digests of delivery.dead alerts (see alerts/digest.ts). An alert waits with
// email_state 'pending' and no digest_hour; a digest row keyed (destination, clock hour) is the
// claim that makes "one e-mail per destination per hour" hold across workers; a worker takes a
// digest with a lease, tags the waiting alerts with it, sends outside any transaction, then marks
// the digest and exactly the alerts it tagged.

const WAITING = "a.type = 'delivery.dead' AND a.email_state = 'pending'";

/**
 * Marks 'skipped' the waiting delivery.dead alerts nobody is to be mailed about: every one when
 * `noSmtp`, else those of tenants without an alert_email. Returns how many.
 */
export async function skipDeathEmails(q: Queryable, noSmtp: boolean): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH s AS (
       UPDATE alerts a SET email_state = 'skipped' FROM tenants t
        WHERE t.id = a.tenant_id AND ${WAITING} AND a.digest_hour IS NULL AND ($1 OR t.alert_email IS NULL)
       RETURNING 1)
     SELECT count(*)::int AS n FROM s`,
    [noSmtp],
  );
  return rows[0]!.n;
}

/**
 * Opens this hour's digest for every destination whose oldest death waiting for one is at least
 * `gatherSeconds` old (a burst of deaths lands in one e-mail), unless the destination has had one
 * this hour or has one still to send. The key (destination, hour) is the claim: of two workers
 * opening at once, one inserts and the other's row is dropped. Returns how many opened.
 */
export async function openDigests(q: Queryable, gatherSeconds: number): Promise<number> {
  // The destinations are found in a CTE, not in the INSERT's own SELECT: Citus sends an INSERT …
  // SELECT whose SELECT reads the table it inserts into with a broken condition appended
  // ("… AND ( IS NOT NULL)", a syntax error); read first, the same rows go in.
  const rows = await q.query<{ destination_id: string }>(
    `WITH due AS (
       SELECT a.destination_id, min(a.tenant_id) AS tenant_id
         FROM alerts a
        WHERE ${WAITING} AND a.digest_hour IS NULL
          AND NOT EXISTS (SELECT 1 FROM alert_digests g WHERE g.destination_id = a.destination_id
                            AND (g.hour = date_trunc('hour', now(), 'UTC') OR g.state = 'pending'))
        GROUP BY a.destination_id
       HAVING min(a.created_at) <= now() - make_interval(secs => $1)
     )
     INSERT INTO alert_digests (destination_id, hour, tenant_id)
     SELECT due.destination_id, date_trunc('hour', now(), 'UTC'), due.tenant_id FROM due
     ON CONFLICT DO NOTHING
     RETURNING destination_id`,
    [gatherSeconds],
  );
  return rows.length;
}

export interface TakenDigest {
  destination_id: string;
  hour: Date;
  tenant_id: string;
  attempts: number;
}

/**
 * Takes up to `limit` due digests for `leaseSeconds` (a worker that dies mid-send leaves them to
 * be taken again then) and tags each one's waiting alerts with it: those are what it lists.
 */
export async function takeDueDigests(q: Queryable, leaseToken: string, leaseSeconds: number, limit: number): Promise<TakenDigest[]> {
  const taken = await q.query<TakenDigest>(
    `UPDATE alert_digests g
        SET lease_token = $1, next_attempt_at = now() + make_interval(secs => $2), attempts = g.attempts + 1
      WHERE (g.destination_id, g.hour) IN (
              SELECT destination_id, hour FROM alert_digests WHERE state = 'pending' AND next_attempt_at <= now()
               ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING g.destination_id, g.hour, g.tenant_id, g.attempts`,
    [leaseToken, leaseSeconds, limit],
  );
  if (taken.length === 0) return taken;
  // Alerts that came since an earlier attempt of the same digest join it: still one e-mail.
  await q.query(
    `UPDATE alerts a SET digest_hour = t.hour
       FROM unnest($1::text[], $2::timestamptz[]) AS t(destination_id, hour)
      WHERE a.destination_id = t.destination_id AND ${WAITING} AND a.digest_hour IS NULL`,
    [taken.map((t) => t.destination_id), taken.map((t) => t.hour.toISOString())],
  );
  return taken;
}

export interface DigestContents {
  alert_email: string | null;
  destination_name: string | null;
  url: string | null;
  deaths: number;
  first_at: Date | null;
  last_at: Date | null;
  /** The first `limit` deaths, oldest first. */
  listed: DeliveryDeadPayload[];
}

/** What a taken digest lists: its alerts' count and time span, the first `limit`, and where it goes. */
export async function digestContents(q: Queryable, d: TakenDigest, limit: number): Promise<DigestContents> {
  const [head] = await q.query<Omit<DigestContents, "listed">>(
    `SELECT t.alert_email, dst.name AS destination_name, dst.url,
            (SELECT count(*)::int FROM alerts a WHERE a.destination_id = $2 AND ${WAITING} AND a.digest_hour = $3) AS deaths,
            (SELECT min(a.created_at) FROM alerts a WHERE a.destination_id = $2 AND ${WAITING} AND a.digest_hour = $3) AS first_at,
            (SELECT max(a.created_at) FROM alerts a WHERE a.destination_id = $2 AND ${WAITING} AND a.digest_hour = $3) AS last_at
       FROM tenants t LEFT JOIN destinations dst ON dst.id = $2
      WHERE t.id = $1`,
    [d.tenant_id, d.destination_id, d.hour],
  );
  const listed = await q.query<{ payload: DeliveryDeadPayload }>(
    `SELECT a.payload FROM alerts a WHERE a.destination_id = $1 AND ${WAITING} AND a.digest_hour = $2
      ORDER BY a.created_at, a.id LIMIT $3`,
    [d.destination_id, d.hour, limit],
  );
  return {
    alert_email: head?.alert_email ?? null,
    destination_name: head?.destination_name ?? null,
    url: head?.url ?? null,
    deaths: head?.deaths ?? 0,
    first_at: head?.first_at ?? null,
    last_at: head?.last_at ?? null,
    listed: listed.map((r) => r.payload),
  };
}

/**
 * Ends a digest and the alerts it tagged with `state` (sent, skipped or failed), if the lease is
 * still `leaseToken` (else another worker took it over and finishes it). Returns whether it did.
 */
export async function finishDigest(
  q: Queryable,
  d: TakenDigest,
  leaseToken: string,
  state: "sent" | "skipped" | "failed",
  deaths: number,
  error: string | null,
): Promise<boolean> {
  const rows = await q.query(
    `UPDATE alert_digests SET state = $4::text, deaths = $5::int, error = $6::text, lease_token = NULL,
            sent_at = CASE WHEN $4::text = 'sent' THEN ${NOW} END
      WHERE destination_id = $1 AND hour = $2 AND lease_token = $3 RETURNING 1`,
    [d.destination_id, d.hour, leaseToken, state, deaths, error],
  );
  if (rows.length === 0) return false;
  await q.query(
    `UPDATE alerts a SET email_state = $3::text, email_error = $4::text,
            email_attempts = a.email_attempts + CASE WHEN $3::text = 'skipped' THEN 0 ELSE 1 END
      WHERE a.destination_id = $1 AND ${WAITING} AND a.digest_hour = $2`,
    [d.destination_id, d.hour, state, error],
  );
  return true;
}

/** A failed send to try again after `retrySeconds`, if the lease is still `leaseToken`. */
export async function retryDigest(q: Queryable, d: TakenDigest, leaseToken: string, retrySeconds: number, error: string): Promise<void> {
  await q.query(
    `UPDATE alert_digests SET lease_token = NULL, error = $4, next_attempt_at = now() + make_interval(secs => $5)
      WHERE destination_id = $1 AND hour = $2 AND lease_token = $3`,
    [d.destination_id, d.hour, leaseToken, error, retrySeconds],
  );
}
