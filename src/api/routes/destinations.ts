import type { FastifyInstance } from "fastify";
import { Type, type Static } from "@sinclair/typebox";
import type { ApiContext } from "../context.js";
import { destinationTimeline } from "../../db/queries/deliveries.js";
import { alertInput, recordAlerts, type AlertInput } from "../../alerts/alerts.js";
import { metrics } from "../../metrics.js";
import { NotFoundError, SluiceError, ValidationError } from "../../errors.js";
import { storedDestinationProblem } from "../../policy/stored-config.js";
import { newId } from "../../ids.js";
import { generateSecret } from "../../delivery/sign.js";
import type { NetworkPolicy } from "../../delivery/network-guard.js";
import {
  insertDestination,
  getDestination,
  listDestinations,
  destinationCounts,
  updateDestinationConfig,
  deleteDestination,
  pauseDestination,
  resumeDestination,
  recomputeQuietHold,
  setDestinationSecrets,
  type SecretEntry,
  type DestinationRow,
} from "../../db/queries/destinations.js";
import type { Queryable } from "../../db/db.js";
import { WORK_CHANNEL } from "../../db/channels.js";
import { IdParams, ListQuery, Page } from "../../schemas/common.js";
import {
  AttemptTimeline,
  Destination,
  DestinationCreate,
  DestinationPatch,
  DestinationSecret,
  PauseBody,
  ResumeBody,
  RotateSecretBody,
  TimelineQuery,
} from "../../schemas/destinations.js";
import { answers, BODY_ERRORS } from "../openapi.js";
import { withDefaults, applyPatch, checkDestinationConfig } from "../destination-config.js";
import { destinationView, decodeCursor, page, attemptView, badCursor } from "../serialize.js";
import { assertDestinationVisible, destinationScope } from "../access.js";

/** Previous secrets keep signing for this long after a rotation, so receivers can switch over. */
const DEFAULT_ROTATION_GRACE_SECONDS = 24 * 3600;

export function destinationRoutes(ctx: ApiContext) {
  const tags = ["destinations"];
  const One = Type.Ref(Destination);
  const Secret = Type.Ref(DestinationSecret);

  async function view(q: Queryable, row: DestinationRow, withSecret = false) {
    const counts = await destinationCounts(q, [row.id]);
    return destinationView(row, counts.get(row.id), { withSecret });
  }

  async function mustGet(q: Queryable, tenantId: string, id: string, lock = false): Promise<DestinationRow> {
    const row = await getDestination(q, tenantId, id, lock);
    if (!row) throw new NotFoundError("destination", id);
    return row;
  }

  return async (app: FastifyInstance) => {
    app.post<{ Body: DestinationCreate }>(
      "/v1/destinations",
      {
        schema: {
          operationId: "createDestination",
          summary: "Create a destination",
          tags,
          body: DestinationCreate,
          response: answers({ 201: One }, BODY_ERRORS),
        },
      },
      async (req, reply) => {
        const config = withDefaults(req.body);
        const problems = checkDestinationConfig(config, networkPolicy(ctx));
        if (problems.length) throw new ValidationError("destination", problems);
        const secrets: SecretEntry[] = [{ secret: req.body.secret ?? generateSecret(), expires_at: null }];
        const row = await ctx.db.tx((q) => insertDestination(q, newId("dst"), req.tenant.id, config, secrets));
        return reply.status(201).send(destinationView(row, undefined, { withSecret: true }));
      },
    );

    app.get<{ Querystring: Static<typeof ListQuery> }>(
      "/v1/destinations",
      {
        schema: {
          operationId: "listDestinations",
          summary: "List destinations, newest first",
          tags,
          querystring: ListQuery,
          response: answers({ 200: Page(One) }),
        },
        config: { portal: "read" },
      },
      async (req) => {
        const before = decodeCursor(req.query.cursor);
        if (before === undefined) throw badCursor();
        const limit = req.query.limit ?? 100;
        const rows = await listDestinations(ctx.db, req.tenant.id, limit, before, destinationScope(req));
        const counts = await destinationCounts(
          ctx.db,
          rows.map((r) => r.id),
        );
        return page(
          rows.map((r) => destinationView(r, counts.get(r.id))),
          limit,
        );
      },
    );

    app.get<{ Params: Static<typeof IdParams> }>(
      "/v1/destinations/:id",
      {
        schema: {
          operationId: "getDestination",
          summary: "Get a destination and its live state",
          tags,
          params: IdParams,
          response: answers({ 200: One }, [404]),
        },
        config: { portal: "read" },
      },
      async (req) => {
        assertDestinationVisible(req, req.params.id);
        return view(ctx.db, await mustGet(ctx.db, req.tenant.id, req.params.id));
      },
    );

    app.get<{ Params: Static<typeof IdParams> }>(
      "/v1/destinations/:id/secret",
      {
        schema: {
          operationId: "getDestinationSecret",
          summary: "Get the signing secret (and earlier ones still signing)",
          tags,
          params: IdParams,
          response: answers({ 200: Secret }, [404]),
        },
        // The customer needs it to verify signatures; a read-only link shows no secret.
        config: { portal: "write" },
      },
      async (req) => {
        assertDestinationVisible(req, req.params.id);
        const row = await mustGet(ctx.db, req.tenant.id, req.params.id);
        const now = Date.now();
        return {
          secret: row.secrets[0]?.secret,
          previous: row.secrets.slice(1).filter((s) => s.expires_at && Date.parse(s.expires_at) > now),
        };
      },
    );

    app.patch<{ Params: Static<typeof IdParams>; Body: DestinationPatch }>(
      "/v1/destinations/:id",
      {
        schema: {
          operationId: "updateDestination",
          summary: "Change any config field; takes effect within a second",
          tags,
          params: IdParams,
          body: DestinationPatch,
          response: answers({ 200: One }, [404, ...BODY_ERRORS]),
        },
        config: { portal: "write" },
      },
      async (req) => {
        assertDestinationVisible(req, req.params.id);
        const row = await ctx.db.tx(async (q) => {
          const current = await mustGet(q, req.tenant.id, req.params.id, true);
          const config = applyPatch(current, req.body);
          // The fields sent, with masked secret header values already put back to the stored ones.
          const sent = req.body.headers === undefined ? req.body : { ...req.body, headers: config.headers };
          const problems = checkDestinationConfig(sent, networkPolicy(ctx));
          if (problems.length) throw new ValidationError("destination", problems);
          const secrets = req.body.secret ? rotate(current.secrets, req.body.secret, DEFAULT_ROTATION_GRACE_SECONDS) : null;
          const updated = await updateDestinationConfig(q, current.id, config, secrets);
          if (JSON.stringify(config.delivery_schedule) !== JSON.stringify(current.delivery_schedule)) {
            await recomputeQuietHold(q, current.id, config.delivery_schedule);
          }
          return view(q, updated);
        });
        await ctx.db.notify(WORK_CHANNEL);
        return row;
      },
    );

    app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof RotateSecretBody> }>(
      "/v1/destinations/:id/rotate-secret",
      {
        schema: {
          operationId: "rotateDestinationSecret",
          summary: "Rotate the signing secret; earlier ones keep signing for grace_seconds",
          tags,
          params: IdParams,
          body: RotateSecretBody,
          response: answers({ 200: Secret }, [404, ...BODY_ERRORS]),
        },
        config: { optionalBody: true, portal: "write" },
      },
      async (req) => {
        assertDestinationVisible(req, req.params.id);
        return ctx.db.tx(async (q) => {
          const current = await mustGet(q, req.tenant.id, req.params.id, true);
          const secret = req.body.secret ?? generateSecret();
          const secrets = rotate(current.secrets, secret, req.body.grace_seconds ?? DEFAULT_ROTATION_GRACE_SECONDS);
          await setDestinationSecrets(q, current.id, secrets);
          return { secret, previous: secrets.slice(1) };
        });
      },
    );

    app.delete<{ Params: Static<typeof IdParams> }>(
      "/v1/destinations/:id",
      {
        schema: {
          operationId: "deleteDestination",
          summary: "Delete a destination",
          tags,
          params: IdParams,
          response: answers({ 204: Type.Null() }, [404]),
        },
      },
      async (req, reply) => {
        await ctx.db.tx(async (q) => {
          await mustGet(q, req.tenant.id, req.params.id, true);
          await deleteDestination(q, req.params.id);
        });
        return reply.status(204).send();
      },
    );

    app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof TimelineQuery> }>(
      "/v1/destinations/:id/attempts",
      {
        schema: {
          operationId: "listDestinationAttempts",
          summary: "The destination's attempt timeline, newest first (probes included)",
          tags,
          params: IdParams,
          querystring: TimelineQuery,
          response: answers({ 200: AttemptTimeline }, [404]),
        },
        config: { portal: "read" },
      },
      async (req) => {
        assertDestinationVisible(req, req.params.id);
        const d = await mustGet(ctx.db, req.tenant.id, req.params.id);
        const limit = req.query.limit ?? 100;
        const rows = await destinationTimeline(ctx.db, d.id, limit, req.query.before ? new Date(req.query.before) : null);
        const last = rows[rows.length - 1];
        return { data: rows.map(attemptView), next_before: rows.length === limit && last ? last.started_at.toISOString() : null };
      },
    );

    app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof PauseBody> }>(
      "/v1/destinations/:id/pause",
      {
        schema: {
          operationId: "pauseDestination",
          summary: "Pause: hold every delivery to it",
          tags,
          params: IdParams,
          body: PauseBody,
          response: answers({ 200: One }, [404, ...BODY_ERRORS]),
        },
        config: { optionalBody: true, portal: "write" },
      },
      async (req) => {
        assertDestinationVisible(req, req.params.id);
        const { out, paused } = await ctx.db.tx(async (q) => {
          const current = await mustGet(q, req.tenant.id, req.params.id, true);
          const reason = req.body.reason ? `manual: ${req.body.reason}` : "manual";
          await pauseDestination(q, req.params.id, reason);
          const after = await view(q, await mustGet(q, req.tenant.id, req.params.id));
          if (!current.paused_at) {
            metrics.paused.inc({ reason: "manual" });
            await recordAlerts(q, [manualAlert(current, "destination.paused", reason, after)]);
          }
          return { out: after, paused: current.paused_at ? null : reason };
        });
        // After the commit, and only when it changed something (a second pause just renames it).
        if (paused !== null)
          ctx.log.info({ tenant_id: req.tenant.id, destination_id: req.params.id, by: "api", reason: paused }, "destination paused");
        return out;
      },
    );

    app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof ResumeBody> }>(
      "/v1/destinations/:id/resume",
      {
        schema: {
          operationId: "resumeDestination",
          summary: "Resume: replay or discard what was held",
          tags,
          params: IdParams,
          body: ResumeBody,
          response: answers({ 200: One }, [404, 409, ...BODY_ERRORS]),
        },
        config: { optionalBody: true, portal: "write" },
      },
      async (req) => {
        assertDestinationVisible(req, req.params.id);
        const { out, resumed } = await ctx.db.tx(async (q) => {
          const current = await mustGet(q, req.tenant.id, req.params.id, true);
          // Resumed as it is, the workers would only set it aside again (docs/health.md).
          const problem = current.paused_at ? storedDestinationProblem(current) : null;
          if (problem !== null) throw new SluiceError("SLUICE_DESTINATION_CONFIG_INVALID", { id: current.id, problem });
          const replay = req.body.replay ?? current.replay_on_resume;
          const discarded = await resumeDestination(q, current.id, replay);
          const after = await view(q, await mustGet(q, req.tenant.id, req.params.id));
          if (current.paused_at) {
            const how = replay ? "its held deliveries are replayed in order" : `${discarded} held deliveries were discarded`;
            await recordAlerts(q, [manualAlert(current, "destination.resumed", `resumed through the API; ${how}`, after, { discarded })]);
          }
          const resumed = current.paused_at
            ? { mode: replay ? "replay" : "discard", discarded, paused_reason: current.pause_reason }
            : null;
          return { out: { ...after, discarded }, resumed };
        });
        if (resumed)
          ctx.log.info({ tenant_id: req.tenant.id, destination_id: req.params.id, by: "api", ...resumed }, "destination resumed");
        await ctx.db.notify(WORK_CHANNEL);
        return out;
      },
    );
  };
}

/** The delivery network policy, as the workers apply it (same settings, same meaning). */
function networkPolicy(ctx: ApiContext): NetworkPolicy {
  return { allowPrivateNetworks: ctx.config.allowPrivateNetworks, allowedCidrs: ctx.config.allowedCidrs };
}

function rotate(current: SecretEntry[], secret: string, graceSeconds: number): SecretEntry[] {
  const now = Date.now();
  const expires = new Date(now + graceSeconds * 1000).toISOString();
  const kept = current
    .filter((s) => s.secret !== secret)
    .map((s) => ({ secret: s.secret, expires_at: s.expires_at ?? expires }))
    .filter((s) => Date.parse(s.expires_at) > now);
  return [{ secret, expires_at: null }, ...kept].slice(0, 5);
}

function manualAlert(
  d: DestinationRow,
  type: AlertInput["type"],
  reason: string,
  view: { health: AlertInput["payload"]["health"]; queued_events: number },
  extra: Record<string, unknown> = {},
): AlertInput {
  return alertInput(d, type, reason, view.health, { queued_events: view.queued_events, ...extra });
}
