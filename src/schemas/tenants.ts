import { Type, type Static } from "@sinclair/typebox";
import { Nullable, Timestamp } from "./common.js";

export const TenantCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    alert_email: Type.Optional(Nullable(Type.String({ format: "email", maxLength: 320, description: "where alerts are e-mailed" }))),
  },
  { additionalProperties: false },
);
export type TenantCreate = Static<typeof TenantCreate>;

export const TenantPatch = Type.Partial(TenantCreate, { additionalProperties: false, minProperties: 1 });
export type TenantPatch = Static<typeof TenantPatch>;

export const Tenant = Type.Object(
  {
    id: Type.String({ description: "ten_…" }),
    name: Type.String(),
    alert_email: Nullable(Type.String()),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { $id: "Tenant" },
);
export type Tenant = Static<typeof Tenant>;

export const TenantCreated = Type.Composite([Tenant, Type.Object({ api_key: Type.String({ description: "shown this once" }) })], {
  $id: "TenantCreated",
});
