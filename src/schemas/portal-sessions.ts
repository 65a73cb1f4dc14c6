import { Type, type Static } from "@sinclair/typebox";
import { Bounded, Nullable, Timestamp } from "./common.js";

// Consumer-portal sessions: a short-lived link (a token in the URL's fragment) that shows a
// tenant's customer that tenant's destinations, or some of them, without the API key ever
// reaching the browser. The token is in the create answer only; it is stored hashed.

/** #rgb or #rrggbb: the theme ends up in CSS, so nothing but a plain colour is taken. */
export const CSS_COLOUR = "^#([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$";
/** Font names, quoted or not, separated by commas: no ; { } < > that could end the declaration. */
export const FONT_FAMILY = "^[A-Za-z0-9 ,'\"-]{1,200}$";

const Colour = (description: string) => Type.String({ pattern: CSS_COLOUR, description });

export const PortalTheme = Type.Object(
  {
    accent: Type.Optional(Colour("buttons, links and focus rings, e.g. #4f46e5")),
    background: Type.Optional(Colour("page background")),
    surface: Type.Optional(Colour("cards and tables")),
    text: Type.Optional(Colour("body text")),
    font_family: Type.Optional(Type.String({ pattern: FONT_FAMILY, description: "a CSS font-family list, e.g. Inter, sans-serif" })),
  },
  { additionalProperties: false, description: "CSS variables the portal page is drawn with; unset ones keep Sluice's" },
);
export type PortalTheme = Static<typeof PortalTheme>;

export const PortalSessionCreate = Type.Object(
  {
    destination_ids: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        minItems: 1,
        maxItems: 100,
        uniqueItems: true,
        description: "the destinations the link shows (dst_…); omitted: every destination of the tenant, present and future",
      }),
    ),
    ttl_seconds: Type.Optional(Bounded("portal_ttl_seconds", { description: "how long the link works, 60 s to 24 h (default 3600)" })),
    read_only: Type.Optional(Type.Boolean({ description: "view only: no pause, resume, retry, edit or secret (default false)" })),
    theme: Type.Optional(PortalTheme),
  },
  { additionalProperties: false },
);
export type PortalSessionCreate = Static<typeof PortalSessionCreate>;

const SessionFields = {
  id: Type.String({ description: "pst_…: DELETE /v1/portal-sessions/{id} revokes it" }),
  destination_ids: Nullable(Type.Array(Type.String(), { description: "null: every destination of the tenant" })),
  read_only: Type.Boolean(),
  expires_at: Timestamp(),
  theme: PortalTheme,
};

export const PortalSessionCreated = Type.Object(
  {
    ...SessionFields,
    url: Type.String({ description: "the link to hand to the customer (or to put in an iframe); the token is in its #fragment" }),
    token: Type.String({ description: "sp_…: shown this once, stored only hashed" }),
  },
  { $id: "PortalSessionCreated" },
);
export type PortalSessionCreated = Static<typeof PortalSessionCreated>;

export const PortalSession = Type.Object(
  {
    ...SessionFields,
    tenant: Type.Object({ id: Type.String(), name: Type.String() }),
  },
  { $id: "PortalSession", description: "The portal link a request is made with: its scope and theme" },
);
export type PortalSession = Static<typeof PortalSession>;
