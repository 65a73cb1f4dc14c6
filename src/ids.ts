import { randomBytes } from "node:crypto";

// Ids are `<prefix>_` + 12 hex digits of milliseconds, 3 of sequence, 12 random hex digits: they sort by
// creation time, which cursor pagination relies on (newest first = id descending).
let lastMs = 0;
let seq = 0;

export function newId(prefix: string): string {
  let ms = Date.now();
  if (ms <= lastMs) {
    // Same millisecond (or clock stepped back): keep ids from one process strictly increasing.
    ms = lastMs;
    seq++;
  } else {
    lastMs = ms;
    seq = 0;
  }
  const time = ms.toString(16).padStart(12, "0") + (seq & 0xfff).toString(16).padStart(3, "0");
  return `${prefix}_${time}${randomHex12()}`;
}

// One getrandom call per 682 ids instead of one per id: ids are minted in bulk by batch ingest.
let pool = Buffer.alloc(0);
let offset = 0;
function randomHex12(): string {
  if (offset + 6 > pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  const hex = pool.toString("hex", offset, offset + 6);
  offset += 6;
  return hex;
}

export function randomToken(bytes = 24): string {
  return randomBytes(bytes).toString("base64url");
}

/** A new tenant API key; it is shown once and stored only hashed. */
export const newApiKey = (): string => `sk_${randomToken(24)}`;

/** What starts every portal-session token: auth.ts tells them from API keys by it. */
export const PORTAL_TOKEN_PREFIX = "sp_";

/** A new consumer-portal token; like an API key, shown once and stored only hashed. */
export const newPortalToken = (): string => `${PORTAL_TOKEN_PREFIX}${randomToken(32)}`;
