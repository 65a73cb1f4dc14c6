// Standard Webhooks signing (https://www.standardwebhooks.com): HMAC-SHA256 over
// "<msg id>.<unix seconds>.<body>", keyed by the base64-decoded part of a `whsec_` secret.
import { createHmac, randomBytes } from "node:crypto";

const PREFIX = "whsec_";
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function generateSecret(): string {
  return PREFIX + randomBytes(24).toString("base64");
}

/** `whsec_` + standard base64 of 24-64 bytes (the range Standard Webhooks libraries accept). */
export function isValidSecret(s: string): boolean {
  if (!s.startsWith(PREFIX)) return false;
  const b64 = s.slice(PREFIX.length);
  // Buffer.from silently skips invalid characters, so validate the text first.
  if (b64.length === 0 || !STRICT_BASE64.test(b64)) return false;
  const bytes = Buffer.from(b64, "base64").length;
  return bytes >= 24 && bytes <= 64;
}

// Secrets are few and reused on every delivery: keep their decoded keys.
const keyCache = new Map<string, Buffer>();
const KEY_CACHE_MAX = 10_000;

function keyOf(secret: string): Buffer {
  let key = keyCache.get(secret);
  if (key === undefined) {
    key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
    keyCache.set(secret, key);
  }
  return key;
}

/** The `webhook-signature` value: one `v1,<base64>` per secret, space-separated (several during rotation). */
export function signatureHeader(secrets: string[], msgId: string, timestampSeconds: number, body: string): string {
  const content = `${msgId}.${timestampSeconds}.${body}`;
  let header = "";
  for (const secret of secrets) {
    const sig = createHmac("sha256", keyOf(secret)).update(content).digest("base64");
    header = header === "" ? `v1,${sig}` : `${header} v1,${sig}`;
  }
  return header;
}
