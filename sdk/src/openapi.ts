// Generated from sdk/openapi.json by `npm run sdk:generate` (openapi-typescript). Do not edit:
// change the schemas in src/schemas/ and the routes in src/api/routes/, then regenerate.
/* eslint-disable */
export interface paths {
    "/v1/tenants": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List every tenant, newest first (admin key) */
        get: operations["listTenants"];
        put?: never;
        /** Create a tenant and its first API key (admin key) */
        post: operations["createTenant"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tenant": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The calling key's tenant */
        get: operations["getTenant"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /** Change the calling key's tenant */
        patch: operations["updateTenant"];
        trace?: never;
    };
    "/v1/api-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List this tenant's API keys, newest first (names and prefixes, never the keys) */
        get: operations["listApiKeys"];
        put?: never;
        /** Create another API key for this tenant; the key is in this answer only */
        post: operations["createApiKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/api-keys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Delete an API key: it stops working at once (not the tenant's last key) */
        delete: operations["deleteApiKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/destinations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List destinations, newest first */
        get: operations["listDestinations"];
        put?: never;
        /** Create a destination */
        post: operations["createDestination"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/destinations/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a destination and its live state */
        get: operations["getDestination"];
        put?: never;
        post?: never;
        /** Delete a destination */
        delete: operations["deleteDestination"];
        options?: never;
        head?: never;
        /** Change any config field; takes effect within a second */
        patch: operations["updateDestination"];
        trace?: never;
    };
    "/v1/destinations/{id}/secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get the signing secret (and earlier ones still signing) */
        get: operations["getDestinationSecret"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/destinations/{id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Rotate the signing secret; earlier ones keep signing for grace_seconds */
        post: operations["rotateDestinationSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/destinations/{id}/attempts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The destination's attempt timeline, newest first (probes included) */
        get: operations["listDestinationAttempts"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/destinations/{id}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Pause: hold every delivery to it */
        post: operations["pauseDestination"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/destinations/{id}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Resume: replay or discard what was held */
        post: operations["resumeDestination"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Find events by type (order.* for a prefix) and time, newest first */
        get: operations["listEvents"];
        put?: never;
        /** Publish an event; durable when answered */
        post: operations["publishEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Publish up to 1,000 events in one transaction */
        post: operations["publishEventBatch"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get an event and its deliveries */
        get: operations["getEvent"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List deliveries, newest first */
        get: operations["listDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/deliveries/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a delivery */
        get: operations["getDelivery"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/deliveries/{id}/attempts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A delivery's attempts, first to last */
        get: operations["listDeliveryAttempts"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/deliveries/{id}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Queue a dead or discarded delivery again */
        post: operations["retryDelivery"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/destinations/{id}/recover": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Queue again the dead, discarded (or delivered) deliveries whose events occurred in a time range */
        post: operations["recoverDestination"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/destinations/{id}/recoveries/{rid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A recovery's progress */
        get: operations["getRecovery"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Delivery numbers of every destination the caller may see, per minute, for the dashboard */
        get: operations["getStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/destinations/{id}/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One destination's numbers: outcomes per minute, arrivals per second, token buckets and held deliveries now */
        get: operations["getDestinationStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/portal-sessions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Make a consumer-portal link for this tenant's customer; the token is in this answer only */
        post: operations["createPortalSession"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/portal-session": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The portal link this request is made with (portal token only): its scope, tenant and theme */
        get: operations["getPortalSession"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/portal-sessions/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Revoke a portal link: it stops working at once */
        delete: operations["deletePortalSession"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description Every error answer */
        Error: {
            error: {
                /**
                 * @description stable code: branch on it (docs/api.md says when each happens)
                 * @enum {string}
                 */
                code: "SLUICE_REQUEST_MALFORMED_JSON" | "SLUICE_REQUEST_EMPTY_BODY" | "SLUICE_REQUEST_INVALID" | "SLUICE_AUTH_TENANT_REQUIRED" | "SLUICE_AUTH_INVALID_KEY" | "SLUICE_PORTAL_LINK_INVALID" | "SLUICE_AUTH_ADMIN_DISABLED" | "SLUICE_AUTH_ADMIN_REQUIRED" | "SLUICE_PORTAL_FORBIDDEN" | "SLUICE_PORTAL_READ_ONLY" | "SLUICE_PORTAL_SESSION_REQUIRED" | "SLUICE_DESTINATION_NOT_FOUND" | "SLUICE_DELIVERY_NOT_FOUND" | "SLUICE_EVENT_NOT_FOUND" | "SLUICE_API_KEY_NOT_FOUND" | "SLUICE_RECOVERY_NOT_FOUND" | "SLUICE_TENANT_NOT_FOUND" | "SLUICE_CELL_NOT_SERVED" | "SLUICE_PORTAL_SESSION_NOT_FOUND" | "SLUICE_ROUTE_NOT_FOUND" | "SLUICE_IDEMPOTENCY_KEY_REUSED" | "SLUICE_DELIVERY_NOT_RETRYABLE" | "SLUICE_DESTINATION_CONFIG_INVALID" | "SLUICE_API_KEY_LAST" | "SLUICE_EVENT_PAYLOAD_TOO_LARGE" | "SLUICE_EVENT_FANOUT_TOO_LARGE" | "SLUICE_REQUEST_TOO_LARGE" | "SLUICE_REQUEST_TIMEOUT" | "SLUICE_REQUEST_HEADERS_TOO_LARGE" | "SLUICE_REQUEST_UNSUPPORTED_MEDIA_TYPE" | "SLUICE_VALIDATION_FAILED" | "SLUICE_INTERNAL" | "SLUICE_STORE_UNAVAILABLE";
                /** @description what is wrong and how to mend it */
                message: string;
                /** @description for 422: one {field, message} per invalid field */
                details?: unknown;
            };
        };
        Tenant: {
            /** @description ten_… */
            id: string;
            name: string;
            alert_email: string | null;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
        };
        TenantCreated: {
            /** @description ten_… */
            id: string;
            name: string;
            alert_email: string | null;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
            /** @description shown this once */
            api_key: string;
        };
        /** @description An API key of the tenant; never the key itself */
        ApiKey: {
            /** @description key_… */
            id: string;
            name: string;
            prefix: string | null;
            /** Format: date-time */
            created_at: string;
        };
        ApiKeyCreated: {
            /** @description key_… */
            id: string;
            name: string;
            prefix: string | null;
            /** Format: date-time */
            created_at: string;
            /** @description the key: shown this once, stored only hashed */
            key: string;
        };
        Destination: {
            /** @description dst_… */
            id: string;
            name: string;
            /** @description http or https URL deliveries POST to */
            url: string;
            event_types: string[];
            timeout_seconds: number;
            max_concurrency: number;
            ordered: boolean;
            rate_limit: {
                max_per_second?: number;
                max_per_minute?: number;
                burst_capacity?: number;
            } | null;
            adaptive: {
                /** @description let Sluice find this destination's pace from its answers (429, 503, timeouts, latency) */
                enabled: boolean;
                /** @description never slower than this (default 1) */
                min_per_second?: number;
                /** @description never faster than this (default 1000, and never above rate_limit when set) */
                max_per_second?: number;
                /** @description slow down when recent latency is above this; default: when it is well above the destination's own baseline */
                target_latency_ms?: number;
            } | null;
            delivery_schedule: {
                /** @description IANA zone name, e.g. Europe/Berlin */
                timezone: string;
                /** @description HH:MM[:SS] local time the quiet window starts */
                quiet_start: string;
                /** @description HH:MM[:SS] local time it ends; may be before quiet_start (crosses midnight) */
                quiet_end: string;
                days?: ("mon" | "tue" | "wed" | "thu" | "fri" | "sat" | "sun")[];
                applies_to?: string[];
                bypass_event_types?: string[];
            } | null;
            retry_schedule_seconds: number[];
            throttle_schedule_seconds: number[];
            probe_interval_seconds: number;
            replay_on_resume: boolean;
            /** @description how long deliveries wait for a paused destination before they are discarded */
            paused_retention_hours: number;
            backlog_alert_minutes: number | null;
            backlog_alert_age_minutes: number | null;
            /** @description name → value, sent on every request (deliveries and probes). Names: RFC 9110 tokens, case-insensitive; webhook-*, content-type, content-length, host, user-agent, expect and hop-by-hop names are reserved. Values: visible ASCII, space, tab. Secret values show as ••••••; a PATCH that sends •••••• back keeps the stored value */
            headers: {
                [key: string]: string;
            };
            /** @description header names whose values are secret: API answers show •••••• instead (authorization always is) */
            secret_headers: string[];
            /** @description on create only: the signing secret */
            secret?: string;
            /** @enum {string} */
            status: "active" | "throttled" | "rate_limited" | "quiet" | "paused";
            throttled_until: string | null;
            throttle_reason: string | null;
            paused_at: string | null;
            pause_reason: string | null;
            quiet_until: string | null;
            next_quiet_at: string | null;
            next_probe_at: string | null;
            ramp_limit: number | null;
            effective_rate_per_second: number | null;
            /** @description requests it may have in flight now: max_concurrency, lowered by adaptive pace or a recovery ramp */
            effective_concurrency: number;
            pace_reason: string | null;
            pace_changed_at: string | null;
            /** @description backlog alerts standing now (destination.backlog_growing, destination.backlog_stale), until backlog_recovered */
            backlog_alerts: ("growing" | "stale")[];
            /** @description deliveries not yet finished */
            queued_events: number;
            /** @description deliveries in flight now */
            inflight: number;
            health: {
                /** @enum {string} */
                status: "healthy" | "degraded" | "critical" | "unhealthy";
                score: number;
                consecutive_failures: number;
            };
            /** @description on resume only: held deliveries discarded */
            discarded?: number;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
        };
        DestinationSecret: {
            /** @description the current signing secret */
            secret: string;
            /** @description earlier secrets that still sign until expires_at */
            previous: {
                secret: string;
                expires_at: string | null;
            }[];
        };
        Attempt: {
            delivery_id: string | null;
            /** @enum {string} */
            kind: "delivery" | "probe";
            class: string | null;
            attempt: number;
            /** Format: date-time */
            started_at: string;
            latency_ms: number;
            /** @enum {string} */
            outcome: "success" | "failure" | "throttled";
            status_code: number | null;
            error_class: string | null;
            error_message: string | null;
            response_body: string | null;
        };
        Delivery: {
            /** @description dlv_… */
            id: string;
            event_id: string;
            destination_id: string;
            /** @enum {string} */
            status: "queued" | "held" | "delivering" | "retry_scheduled" | "delivered" | "dead" | "discarded";
            attempts: number;
            next_attempt_at: string | null;
            hold_reason: ("paused" | "throttled" | "quiet_hours" | "scheduled" | "ordering" | "concurrency" | "rate_limited") | null;
            last_error: string | null;
            last_status_code: number | null;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
            trace_id: string | null;
        };
        EventAccepted: {
            /** @description evt_… */
            id: string;
            /** @description deliveries created */
            deliveries: number;
        };
        Event: {
            id: string;
            type: string;
            payload: unknown;
            /** Format: date-time */
            occurred_at: string;
            deliver_at: string | null;
            /** Format: date-time */
            created_at: string;
            trace_id: string | null;
            /** @description GET /v1/events/{id} only */
            deliveries?: components["schemas"]["Delivery"][];
        };
        RecoveryAccepted: {
            /** @description rcv_…: GET /v1/destinations/{id}/recoveries/{rid} follows it */
            id: string;
            /** @description deliveries that matched when the recovery was requested */
            deliveries: number;
        };
        Recovery: {
            /** @description rcv_… */
            id: string;
            destination_id: string;
            /** Format: date-time */
            since: string;
            /**
             * Format: date-time
             * @description exclusive; the request's time when none was given
             */
            until: string;
            statuses: ("dead" | "discarded" | "delivered")[];
            /**
             * @description running: queueing page by page; done: the whole range was passed
             * @enum {string}
             */
            status: "running" | "done";
            /** @description deliveries that matched when the recovery was requested */
            deliveries: number;
            /** @description deliveries queued again so far */
            requeued: number;
            /** Format: date-time */
            created_at: string;
            finished_at: string | null;
        };
        /** @description A tenant's delivery numbers for the dashboard */
        Stats: {
            /**
             * Format: date-time
             * @description start of the first minute of series
             */
            since: string;
            /**
             * Format: date-time
             * @description now, by the store's clock: the last minute of series is still counting
             */
            until: string;
            /** @enum {number} */
            bucket_seconds: 60;
            /** @description one per minute, oldest first; minutes without attempts are zeros */
            series: {
                /**
                 * Format: date-time
                 * @description the minute's start
                 */
                at: string;
                /** @description attempts that delivered (2xx) */
                delivered: number;
                /** @description attempts that failed (any error class; 429 not included) */
                failed: number;
                /** @description attempts answered 429 */
                rate_limited: number;
                latency_p50_ms: number | null;
                latency_p95_ms: number | null;
                latency_p99_ms: number | null;
            }[];
            /** @description held deliveries sampled once a minute, oldest first; a reason absent from a minute had none held (or no worker sampled) */
            backlog: {
                /**
                 * Format: date-time
                 * @description the minute the sample was taken in
                 */
                at: string;
                /** @enum {string} */
                reason: "paused" | "throttled" | "quiet_hours" | "scheduled" | "ordering" | "concurrency" | "rate_limited";
                /** @description deliveries held for this reason */
                n: number;
                /** @description since the oldest of them was published */
                oldest_age_seconds: number;
            }[];
            /** @description held deliveries now, by reason (reasons with none left out) */
            held_now: {
                /** @enum {string} */
                reason: "paused" | "throttled" | "quiet_hours" | "scheduled" | "ordering" | "concurrency" | "rate_limited";
                /** @description deliveries held for this reason now */
                n: number;
                /** @description since the oldest of them was published */
                oldest_age_seconds: number;
            }[];
            /** @description every destination the caller may see, by id */
            destinations: {
                id: string;
                /** @description attempts that delivered in the last 60 minutes, the current one included */
                delivered_last_hour: number;
                /** @description attempts that failed in the last 60 minutes */
                failed_last_hour: number;
                oldest_waiting_at: string | null;
            }[];
        };
        /** @description One destination's numbers for the dashboard */
        DestinationStats: {
            /**
             * Format: date-time
             * @description start of the first minute of outcomes
             */
            since: string;
            /**
             * Format: date-time
             * @description now, by the store's clock
             */
            until: string;
            /** @description one per minute, oldest first, zero-filled; probes are not counted */
            outcomes: {
                /**
                 * Format: date-time
                 * @description the minute's start
                 */
                at: string;
                /** @description attempts that delivered (2xx) */
                delivered: number;
                /** @description attempts that failed (any error class) */
                failed: number;
                /** @description attempts answered 429 */
                rate_limited: number;
                /** @description failed attempts that timed out */
                timeouts: number;
                /** @description attempts that did not deliver, by error class without its http_ prefix: 5xx, 4xx, 429, 410, 3xx, timeout, connection, dns, tls, … */
                by_class: {
                    [key: string]: number;
                };
            }[];
            /** @description one per second over the last rate_seconds, oldest first, zero-filled: the rate the receiver saw */
            arrivals: {
                /**
                 * Format: date-time
                 * @description the second's start
                 */
                at: string;
                /** @description attempts started in it, probes included */
                n: number;
            }[];
            limit: {
                max_per_second: number | null;
                max_per_minute: number | null;
                burst_capacity: number | null;
                max_concurrency: number;
            };
            /** @description the token buckets now; null: that window is not limited */
            buckets: {
                second: {
                    /** @description the burst this window allows (burst_capacity, or the window's limit) */
                    capacity: number;
                    /** @description what the claim lets the bucket fill to: the capacity less the send-jitter headroom (SLUICE_RATE_SEND_JITTER_MS) */
                    grant_capacity: number;
                    /** @description tokens in the bucket now (refilled to now; at most grant_capacity) */
                    tokens: number;
                    refill_per_second: number;
                } | null;
                minute: {
                    /** @description the burst this window allows (burst_capacity, or the window's limit) */
                    capacity: number;
                    /** @description what the claim lets the bucket fill to: the capacity less the send-jitter headroom (SLUICE_RATE_SEND_JITTER_MS) */
                    grant_capacity: number;
                    /** @description tokens in the bucket now (refilled to now; at most grant_capacity) */
                    tokens: number;
                    refill_per_second: number;
                } | null;
            };
            /** @description its held deliveries now, by reason */
            held: {
                /** @enum {string} */
                reason: "paused" | "throttled" | "quiet_hours" | "scheduled" | "ordering" | "concurrency" | "rate_limited";
                /** @description deliveries held for this reason now */
                n: number;
                /** @description since the oldest of them was published */
                oldest_age_seconds: number;
            }[];
            /** @description attempts that delivered in the last 60 minutes, the current one included */
            delivered_last_hour: number;
            /** @description attempts that failed in the last 60 minutes */
            failed_last_hour: number;
            oldest_waiting_at: string | null;
        };
        PortalSessionCreated: {
            /** @description pst_…: DELETE /v1/portal-sessions/{id} revokes it */
            id: string;
            destination_ids: string[] | null;
            read_only: boolean;
            /** Format: date-time */
            expires_at: string;
            /** @description CSS variables the portal page is drawn with; unset ones keep Sluice's */
            theme: {
                /** @description buttons, links and focus rings, e.g. #4f46e5 */
                accent?: string;
                /** @description page background */
                background?: string;
                /** @description cards and tables */
                surface?: string;
                /** @description body text */
                text?: string;
                /** @description a CSS font-family list, e.g. Inter, sans-serif */
                font_family?: string;
            };
            /** @description the link to hand to the customer (or to put in an iframe); the token is in its #fragment */
            url: string;
            /** @description sp_…: shown this once, stored only hashed */
            token: string;
        };
        /** @description The portal link a request is made with: its scope and theme */
        PortalSession: {
            /** @description pst_…: DELETE /v1/portal-sessions/{id} revokes it */
            id: string;
            destination_ids: string[] | null;
            read_only: boolean;
            /** Format: date-time */
            expires_at: string;
            /** @description CSS variables the portal page is drawn with; unset ones keep Sluice's */
            theme: {
                /** @description buttons, links and focus rings, e.g. #4f46e5 */
                accent?: string;
                /** @description page background */
                background?: string;
                /** @description cards and tables */
                surface?: string;
                /** @description body text */
                text?: string;
                /** @description a CSS font-family list, e.g. Inter, sans-serif */
                font_family?: string;
            };
            tenant: {
                id: string;
                name: string;
            };
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type Error = components['schemas']['Error'];
export type Tenant = components['schemas']['Tenant'];
export type TenantCreated = components['schemas']['TenantCreated'];
export type ApiKey = components['schemas']['ApiKey'];
export type ApiKeyCreated = components['schemas']['ApiKeyCreated'];
export type Destination = components['schemas']['Destination'];
export type DestinationSecret = components['schemas']['DestinationSecret'];
export type Attempt = components['schemas']['Attempt'];
export type Delivery = components['schemas']['Delivery'];
export type EventAccepted = components['schemas']['EventAccepted'];
export type Event = components['schemas']['Event'];
export type RecoveryAccepted = components['schemas']['RecoveryAccepted'];
export type Recovery = components['schemas']['Recovery'];
export type Stats = components['schemas']['Stats'];
export type DestinationStats = components['schemas']['DestinationStats'];
export type PortalSessionCreated = components['schemas']['PortalSessionCreated'];
export type PortalSession = components['schemas']['PortalSession'];
export type $defs = Record<string, never>;
export interface operations {
    listTenants: {
        parameters: {
            query?: {
                /** @description page size */
                limit?: number;
                /** @description the next_cursor of the previous page */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Tenant"][];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createTenant: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name: string;
                    alert_email?: string | null;
                };
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TenantCreated"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getTenant: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tenant"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    updateTenant: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name?: string;
                    alert_email?: string | null;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tenant"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listApiKeys: {
        parameters: {
            query?: {
                /** @description page size */
                limit?: number;
                /** @description the next_cursor of the previous page */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["ApiKey"][];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description a label to tell keys apart, e.g. 'billing service' */
                    name: string;
                };
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyCreated"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no body */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflicts with the object's state or an earlier request */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listDestinations: {
        parameters: {
            query?: {
                /** @description page size */
                limit?: number;
                /** @description the next_cursor of the previous page */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Destination"][];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createDestination: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description http or https URL deliveries POST to */
                    url: string;
                    name?: string;
                    event_types?: string[];
                    timeout_seconds?: number;
                    max_concurrency?: number;
                    ordered?: boolean;
                    rate_limit?: {
                        max_per_second?: number;
                        max_per_minute?: number;
                        burst_capacity?: number;
                    } | null;
                    adaptive?: {
                        /** @description let Sluice find this destination's pace from its answers (429, 503, timeouts, latency) */
                        enabled: boolean;
                        /** @description never slower than this (default 1) */
                        min_per_second?: number;
                        /** @description never faster than this (default 1000, and never above rate_limit when set) */
                        max_per_second?: number;
                        /** @description slow down when recent latency is above this; default: when it is well above the destination's own baseline */
                        target_latency_ms?: number;
                    } | null;
                    delivery_schedule?: {
                        /** @description IANA zone name, e.g. Europe/Berlin */
                        timezone: string;
                        /** @description HH:MM[:SS] local time the quiet window starts */
                        quiet_start: string;
                        /** @description HH:MM[:SS] local time it ends; may be before quiet_start (crosses midnight) */
                        quiet_end: string;
                        days?: ("mon" | "tue" | "wed" | "thu" | "fri" | "sat" | "sun")[];
                        applies_to?: string[];
                        bypass_event_types?: string[];
                    } | null;
                    retry_schedule_seconds?: number[];
                    throttle_schedule_seconds?: number[];
                    probe_interval_seconds?: number;
                    replay_on_resume?: boolean;
                    /** @description how long deliveries wait for a paused destination before they are discarded */
                    paused_retention_hours?: number;
                    backlog_alert_minutes?: number | null;
                    backlog_alert_age_minutes?: number | null;
                    /** @description name → value, sent on every request (deliveries and probes). Names: RFC 9110 tokens, case-insensitive; webhook-*, content-type, content-length, host, user-agent, expect and hop-by-hop names are reserved. Values: visible ASCII, space, tab. Secret values show as ••••••; a PATCH that sends •••••• back keeps the stored value */
                    headers?: {
                        [key: string]: string;
                    };
                    /** @description header names whose values are secret: API answers show •••••• instead (authorization always is) */
                    secret_headers?: string[];
                    /** @description Standard Webhooks secret whsec_<base64> */
                    secret?: string;
                };
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Destination"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getDestination: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Destination"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteDestination: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no body */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    updateDestination: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description http or https URL deliveries POST to */
                    url?: string;
                    name?: string;
                    event_types?: string[];
                    timeout_seconds?: number;
                    max_concurrency?: number;
                    ordered?: boolean;
                    rate_limit?: {
                        max_per_second?: number;
                        max_per_minute?: number;
                        burst_capacity?: number;
                    } | null;
                    adaptive?: {
                        /** @description let Sluice find this destination's pace from its answers (429, 503, timeouts, latency) */
                        enabled: boolean;
                        /** @description never slower than this (default 1) */
                        min_per_second?: number;
                        /** @description never faster than this (default 1000, and never above rate_limit when set) */
                        max_per_second?: number;
                        /** @description slow down when recent latency is above this; default: when it is well above the destination's own baseline */
                        target_latency_ms?: number;
                    } | null;
                    delivery_schedule?: {
                        /** @description IANA zone name, e.g. Europe/Berlin */
                        timezone: string;
                        /** @description HH:MM[:SS] local time the quiet window starts */
                        quiet_start: string;
                        /** @description HH:MM[:SS] local time it ends; may be before quiet_start (crosses midnight) */
                        quiet_end: string;
                        days?: ("mon" | "tue" | "wed" | "thu" | "fri" | "sat" | "sun")[];
                        applies_to?: string[];
                        bypass_event_types?: string[];
                    } | null;
                    retry_schedule_seconds?: number[];
                    throttle_schedule_seconds?: number[];
                    probe_interval_seconds?: number;
                    replay_on_resume?: boolean;
                    /** @description how long deliveries wait for a paused destination before they are discarded */
                    paused_retention_hours?: number;
                    backlog_alert_minutes?: number | null;
                    backlog_alert_age_minutes?: number | null;
                    /** @description name → value, sent on every request (deliveries and probes). Names: RFC 9110 tokens, case-insensitive; webhook-*, content-type, content-length, host, user-agent, expect and hop-by-hop names are reserved. Values: visible ASCII, space, tab. Secret values show as ••••••; a PATCH that sends •••••• back keeps the stored value */
                    headers?: {
                        [key: string]: string;
                    };
                    /** @description header names whose values are secret: API answers show •••••• instead (authorization always is) */
                    secret_headers?: string[];
                    /** @description Standard Webhooks secret whsec_<base64> */
                    secret?: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Destination"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getDestinationSecret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DestinationSecret"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    rotateDestinationSecret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Standard Webhooks secret whsec_<base64> */
                    secret?: string;
                    /** @description how long the previous secrets keep signing (default 24 h) */
                    grace_seconds?: number;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DestinationSecret"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listDestinationAttempts: {
        parameters: {
            query?: {
                limit?: number;
                /** @description only attempts started before this time (the next_before of the previous page) */
                before?: string;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Attempt"][];
                        next_before: string | null;
                    };
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    pauseDestination: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    reason?: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Destination"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    resumeDestination: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description deliver what was held (true) or discard it; default replay_on_resume */
                    replay?: boolean;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Destination"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflicts with the object's state or an earlier request */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listEvents: {
        parameters: {
            query?: {
                /** @description page size */
                limit?: number;
                /** @description the next_cursor of the previous page */
                cursor?: string;
                /** @description an event type, or a prefix ending in * (order.*) */
                type?: string;
                /** @description events that occurred at or after this time */
                since?: string;
                /** @description events that occurred before this time (exclusive); must be after since */
                until?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Event"][];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    publishEvent: {
        parameters: {
            query?: never;
            header?: {
                /** @description a repeat with the same key within 24 h gets the first answer */
                "idempotency-key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Event type, e.g. order.created */
                    type: string;
                    /** @description Any JSON value; at most SLUICE_MAX_PAYLOAD_BYTES */
                    payload: unknown;
                    /**
                     * Format: date-time
                     * @description when it happened (default: now); at most a day ahead of the server's clock
                     */
                    occurred_at?: string;
                    /**
                     * Format: date-time
                     * @description not delivered before this time; at most 365 days ahead
                     */
                    deliver_at?: string;
                    /** @description only these destinations (else every destination whose event_types match) */
                    destination_ids?: string[];
                };
            };
        };
        responses: {
            /** @description Accepted */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventAccepted"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflicts with the object's state or an earlier request */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    publishEventBatch: {
        parameters: {
            query?: never;
            header?: {
                /** @description a repeat with the same key within 24 h gets the first answer */
                "idempotency-key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    events: {
                        /** @description Event type, e.g. order.created */
                        type: string;
                        /** @description Any JSON value; at most SLUICE_MAX_PAYLOAD_BYTES */
                        payload: unknown;
                        /**
                         * Format: date-time
                         * @description when it happened (default: now); at most a day ahead of the server's clock
                         */
                        occurred_at?: string;
                        /**
                         * Format: date-time
                         * @description not delivered before this time; at most 365 days ahead
                         */
                        deliver_at?: string;
                        /** @description only these destinations (else every destination whose event_types match) */
                        destination_ids?: string[];
                    }[];
                };
            };
        };
        responses: {
            /** @description Accepted */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        events: components["schemas"]["EventAccepted"][];
                    };
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflicts with the object's state or an earlier request */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getEvent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Event"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listDeliveries: {
        parameters: {
            query?: {
                /** @description page size */
                limit?: number;
                /** @description the next_cursor of the previous page */
                cursor?: string;
                destination_id?: string;
                event_id?: string;
                status?: "queued" | "held" | "delivering" | "retry_scheduled" | "delivered" | "dead" | "discarded";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Delivery"][];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getDelivery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Delivery"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listDeliveryAttempts: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Attempt"][];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    retryDelivery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Accepted */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Delivery"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflicts with the object's state or an earlier request */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    recoverDestination: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * Format: date-time
                     * @description deliveries whose event occurred at or after this time
                     */
                    since: string;
                    /**
                     * Format: date-time
                     * @description … and before this time (exclusive); must be after since. Default: now
                     */
                    until?: string;
                    /** @description the delivery statuses to queue again; default [dead, discarded] */
                    statuses?: ("dead" | "discarded" | "delivered")[];
                };
            };
        };
        responses: {
            /** @description Accepted */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RecoveryAccepted"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getRecovery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the destination */
                id: string;
                /** @description the recovery, rcv_… */
                rid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Recovery"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getStats: {
        parameters: {
            query?: {
                /** @description how many minutes back, the current one included */
                minutes?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Stats"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getDestinationStats: {
        parameters: {
            query?: {
                /** @description how many minutes back, the current one included */
                minutes?: number;
                /** @description how many seconds of arrivals, the current one included */
                rate_seconds?: number;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DestinationStats"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createPortalSession: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description the destinations the link shows (dst_…); omitted: every destination of the tenant, present and future */
                    destination_ids?: string[];
                    /** @description how long the link works, 60 s to 24 h (default 3600) */
                    ttl_seconds?: number;
                    /** @description view only: no pause, resume, retry, edit or secret (default false) */
                    read_only?: boolean;
                    /** @description CSS variables the portal page is drawn with; unset ones keep Sluice's */
                    theme?: {
                        /** @description buttons, links and focus rings, e.g. #4f46e5 */
                        accent?: string;
                        /** @description page background */
                        background?: string;
                        /** @description cards and tables */
                        surface?: string;
                        /** @description body text */
                        text?: string;
                        /** @description a CSS font-family list, e.g. Inter, sans-serif */
                        font_family?: string;
                    };
                };
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PortalSessionCreated"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getPortalSession: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PortalSession"];
                };
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deletePortalSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no body */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request (not JSON, empty body) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown API key, or a portal link that expired or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such object for this API key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid fields; details names each */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is unreachable; retry after the Retry-After header's seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
