import { Type, type Static } from "@sinclair/typebox";
import { Nullable, Timestamp } from "./common.js";

// A tenant's API keys as the API shows them. The key itself appears once, in the answer that made
// it (ApiKeyCreated); it is stored only hashed, so no other answer can hold it.

export const ApiKeyCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: "a label to tell keys apart, e.g. 'billing service'" }),
  },
  { additionalProperties: false },
);
export type ApiKeyCreate = Static<typeof ApiKeyCreate>;

export const ApiKey = Type.Object(
  {
    id: Type.String({ description: "key_…" }),
    name: Type.String(),
    prefix: Nullable(
      Type.String({ description: "the key's first characters (sk_…), to tell keys apart; null for keys made before Sluice kept it" }),
    ),
    created_at: Timestamp(),
  },
  { $id: "ApiKey", description: "An API key of the tenant; never the key itself" },
);
export type ApiKey = Static<typeof ApiKey>;

export const ApiKeyCreated = Type.Composite(
  [ApiKey, Type.Object({ key: Type.String({ description: "the key: shown this once, stored only hashed" }) })],
  { $id: "ApiKeyCreated" },
);
export type ApiKeyCreated = Static<typeof ApiKeyCreated>;
