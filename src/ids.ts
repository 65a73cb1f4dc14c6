import { randomBytes } from "node:crypto";

// Ids are `<prefix>_` + 12 hex digits of milliseconds, 3 of sequence, 12 random hex digits: they sort by
// creation time, which cursor pagination relies on (newest first = id descending).
let lastMs = 0;
let seq = 0;
let msHex = "";

export function newId(prefix: string): string {
  const ms = Date.now();
  if (ms <= lastMs) {
    // Same millisecond (or clock stepped back): keep ids from one process increasing, on lastMs.
    seq++;
  } else {
    lastMs = ms;
    seq = 0;
    msHex = ms.toString(16).padStart(12, "0");
  }
  return `${prefix}_${msHex}${SEQ_HEX[seq & 0xfff]}${randomHex12()}`;
}

/** "000" … "fff": the sequence part of an id. */
const SEQ_HEX = Array.from({ length: 4096 }, (_, i) => i.toString(16).padStart(3, "0"));

// One getrandom call and one hex encoding per 682 ids instead of one of each per id: ids are
// minted in bulk by batch ingest.
let pool = "";
let offset = 0;
function randomHex12(): string {
  if (offset + 12 > pool.length) {
    pool = randomBytes(4096).toString("hex");
    offset = 0;
  }
  const hex = pool.slice(offset, offset + 12);
  offset += 12;
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
