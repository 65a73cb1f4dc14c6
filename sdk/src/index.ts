// @sluice/client: a typed client for the Sluice API.
//
// The types come from the API's OpenAPI document (./openapi.ts, generated; `npm run sdk:check`
// fails when it is stale), the HTTP from openapi-fetch. On top of that this file adds what a
// generated client lacks: answers unwrapped (a method resolves to the body, or throws a typed
// SluiceApiError), the Idempotency-Key, and async iteration over paged lists.
import createClient, { type Client, type ClientOptions, type MaybeOptionalInit } from "openapi-fetch";
import type { components, paths } from "./openapi.js";

export type * from "./openapi.js";
export { verifyWebhook, Webhook, WebhookVerificationError, type WebhookMessage } from "./webhooks.js";

type Schemas = components["schemas"];
export type ErrorBody = Schemas["Error"];
export type ErrorCode = ErrorBody["error"]["code"];

/** An error answer of the API: `status`, the stable `code`, the `message` and, for 422, the fields. */
export class SluiceApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: unknown;
  /** Seconds to wait before retrying, when the API said (503 while its store is away). */
  readonly retryAfter: number | null;

  constructor(status: number, body: ErrorBody | undefined, headers: Headers) {
    // Not Sluice's error document (a proxy's HTML page, say): the status is all there is.
    const error = typeof body === "object" && body !== null && typeof body.error === "object" ? body.error : undefined;
    super(error?.message ?? `Sluice answered HTTP ${status}`);
    this.name = "SluiceApiError";
    this.status = status;
    this.code = error?.code ?? "SLUICE_INTERNAL";
    this.details = error?.details;
    const retry = Number(headers.get("retry-after"));
    this.retryAfter = headers.has("retry-after") && Number.isFinite(retry) ? retry : null;
  }

  /** The invalid fields of a 422, as `{field, message}`. */
  get fields(): { field: string; message: string }[] {
    return Array.isArray(this.details) ? (this.details as { field: string; message: string }[]) : [];
  }
}

type Method = "get" | "post" | "patch" | "delete";
type PathsWith<M extends Method> = { [P in keyof paths]: paths[P][M] extends undefined ? never : P }[keyof paths];
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type Init<P extends keyof paths, M extends Method> = MaybeOptionalInit<paths[P], M>;
/** The body of an operation's success answer (undefined for 204). */
export type Answer<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { responses: infer R }
    ? {
        [S in keyof R]: S extends 200 | 201 | 202 ? (R[S] extends { content: { "application/json": infer B } } ? B : never) : never;
      }[keyof R]
    : never;
/** The optional second argument: required when the operation takes path params or a body. */
type Args<P extends keyof paths, M extends Method> = undefined extends Init<P, M> ? [init?: Init<P, M>] : [init: Init<P, M>];

type ListPaths = {
  [P in PathsWith<"get">]: Answer<P, "get"> extends { data: unknown[]; next_cursor: string | null } ? P : never;
}[PathsWith<"get">];
type Item<P extends ListPaths> = Answer<P, "get"> extends { data: (infer T)[] } ? T : never;

export interface SluiceOptions {
  /** Where Sluice listens, e.g. http://127.0.0.1:3000 */
  baseUrl: string;
  /** A tenant's API key (or the admin key, for createTenant). */
  apiKey: string;
  /** A fetch to use instead of the global one (tests, proxies). */
  fetch?: ClientOptions["fetch"];
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

export class Sluice {
  /** The underlying openapi-fetch client: `{data, error, response}` answers, nothing thrown. */
  readonly http: Client<paths>;

  constructor(opts: SluiceOptions) {
    this.http = createClient<paths>({
      baseUrl: opts.baseUrl.replace(/\/+$/, ""),
      fetch: opts.fetch,
      headers: { ...opts.headers, authorization: `Bearer ${opts.apiKey}` },
    });
  }

  get<P extends PathsWith<"get">>(path: P, ...init: Args<P, "get">): Promise<Answer<P, "get">> {
    return this.call("get", path, init[0]);
  }

  post<P extends PathsWith<"post">>(path: P, ...init: Args<P, "post">): Promise<Answer<P, "post">> {
    return this.call("post", path, init[0]);
  }

  patch<P extends PathsWith<"patch">>(path: P, ...init: Args<P, "patch">): Promise<Answer<P, "patch">> {
    return this.call("patch", path, init[0]);
  }

  delete<P extends PathsWith<"delete">>(path: P, ...init: Args<P, "delete">): Promise<Answer<P, "delete">> {
    return this.call("delete", path, init[0]);
  }

  /**
   * Every item of a paged list, page after page (following `next_cursor`), e.g.
   * `for await (const d of sluice.paginate("/v1/deliveries", { params: { query: { status: "dead" } } }))`.
   */
  async *paginate<P extends ListPaths>(path: P, ...init: Args<P, "get">): AsyncGenerator<Item<P>> {
    const base = (init[0] ?? {}) as { params?: { query?: Record<string, unknown> } };
    let cursor: string | null | undefined;
    do {
      const query = { ...base.params?.query, ...(cursor ? { cursor } : {}) };
      const page = (await this.call("get", path, { ...base, params: { ...base.params, query } })) as {
        data: Item<P>[];
        next_cursor: string | null;
      };
      yield* page.data;
      cursor = page.next_cursor;
    } while (cursor);
  }

  /**
   * Publishes one event. With `idempotencyKey`, a repeat within 24 hours (a retry after a timeout,
   * say) answers with the first result instead of publishing twice.
   */
  publish(event: EventInput, opts: { idempotencyKey?: string } = {}) {
    return this.post("/v1/events", {
      body: event,
      params: { header: opts.idempotencyKey ? { "idempotency-key": opts.idempotencyKey } : {} },
    });
  }

  private async call(method: Method, path: string, init: unknown): Promise<never> {
    const request = this.http.request as (
      m: Method,
      p: string,
      i?: unknown,
    ) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
    const { data, error, response } = await request(method, path, init);
    if (!response.ok) throw new SluiceApiError(response.status, error as ErrorBody | undefined, response.headers);
    return data as never;
  }
}

/** The body of POST /v1/events. */
export type EventInput = NonNullable<paths["/v1/events"]["post"]["requestBody"]>["content"]["application/json"];
