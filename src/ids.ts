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
  return `${prefix}_${time}${randomBytes(6).toString("hex")}`;
}

export function randomToken(bytes = 24): string {
  return randomBytes(bytes).toString("base64url");
}
