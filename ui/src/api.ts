import type { components, Sluice } from "../../sdk/src/index.js";

// The API's objects as the SDK types them: generated from Sluice's OpenAPI document, so a change
// of the API that the pages do not follow fails the typecheck.

type Schemas = components["schemas"];
export type Destination = Schemas["Destination"];
export type Delivery = Schemas["Delivery"];
export type Attempt = Schemas["Attempt"];
export type Event = Schemas["Event"];
export type Tenant = Schemas["Tenant"];
export type DestinationStatus = Destination["status"];
export type HealthStatus = Destination["health"]["status"];

export type Stats = Schemas["Stats"];
export type DestinationStats = Schemas["DestinationStats"];
export type HeldGroup = Stats["held_now"][number];
export type PortalSession = Schemas["PortalSession"];

export const DESTINATION_STATUSES: DestinationStatus[] = ["active", "throttled", "rate_limited", "quiet", "paused"];

/** Every destination the caller may see, page after page (at most `max`, enough for a screen). */
export async function allDestinations(client: Sluice, max = 5000): Promise<Destination[]> {
  const all: Destination[] = [];
  for await (const d of client.paginate("/v1/destinations", { params: { query: { limit: 500 } } })) {
    all.push(d);
    if (all.length >= max) break;
  }
  return all;
}
