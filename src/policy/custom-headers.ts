// Custom request headers per destination: which names and values are accepted, which names are
// reserved to Sluice or to the connection, and how secret values are masked in API answers.
// Pure: no I/O. Messages name a header, never echo its value (a value may be a credential).
import type { FieldError } from "../errors.js";

/**
 * Shown in place of a secret header's value. Not ASCII, so it can never be a real header value:
 * a client that sends it back (GET → edit → PATCH) can only mean "keep the stored value".
 */
export const HEADER_MASK = "••••••";
export const MAX_CUSTOM_HEADERS = 50;
export const MAX_HEADER_NAME_LENGTH = 100;
export const MAX_HEADER_VALUE_LENGTH = 4096;

/** RFC 9110 §5.6.2 token: the grammar of a field name. */
export const HEADER_NAME_PATTERN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";
const TOKEN = new RegExp(HEADER_NAME_PATTERN);
// Visible ASCII, space and tab: no CR/LF (header injection), NUL or bytes past 0x7e.
const VALUE_CHARS = /^[\t\x20-\x7e]*$/;

/** Always secret, whether or not secret_headers lists it. */
const ALWAYS_SECRET = "authorization";

const SIGNING = "is reserved: Sluice signs every request with its own webhook-* headers (Standard Webhooks)";
const HOP_BY_HOP =
  "is a hop-by-hop header (RFC 9110 §7.6.1): it governs one connection, not the request, and Sluice manages its connections itself";
const RESERVED: Record<string, string> = {
  "content-type": "is reserved: Sluice sends every request as application/json",
  "content-length": "is reserved: Sluice sets it from the body",
  host: "is reserved: it comes from the destination's url",
  "user-agent": "is reserved: Sluice identifies itself with its own User-Agent",
  // undici refuses the header outright (no 100-continue support): every request would fail.
  expect: "is reserved: Sluice does not use 100-continue, and its HTTP client refuses the header",
  connection: HOP_BY_HOP,
  "keep-alive": HOP_BY_HOP,
  "proxy-connection": HOP_BY_HOP,
  "transfer-encoding": HOP_BY_HOP,
  te: HOP_BY_HOP,
  trailer: HOP_BY_HOP,
  upgrade: HOP_BY_HOP,
  "proxy-authenticate": HOP_BY_HOP,
  "proxy-authorization": HOP_BY_HOP,
};

export function isHeaderName(name: string): boolean {
  return name.length >= 1 && name.length <= MAX_HEADER_NAME_LENGTH && TOKEN.test(name);
}

/** Why a custom header may not use this name (any case), or null when it may. */
export function reservedReason(name: string): string | null {
  const lower = name.toLowerCase();
  if (lower.startsWith("webhook-")) return SIGNING;
  return RESERVED[lower] ?? null;
}

/** Whether the value of header `name` is secret under `secretHeaders` (case-insensitive). */
export function isSecretHeader(name: string, secretHeaders: readonly string[]): boolean {
  const lower = name.toLowerCase();
  return lower === ALWAYS_SECRET || secretHeaders.some((s) => s.toLowerCase() === lower);
}

/** The headers as API answers show them: secret values replaced by HEADER_MASK. */
export function maskHeaders(headers: Record<string, string>, secretHeaders: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name] = isSecretHeader(name, secretHeaders) ? HEADER_MASK : value;
  return out;
}

/**
 * A PATCH's headers with each HEADER_MASK value put back to the stored value it stands for: the
 * stored header of that name (any case) when it was secret. A mask with nothing to stand for is
 * left as it is, for checkCustomHeaders to refuse.
 */
export function restoreMasked(
  next: Record<string, string>,
  stored: Record<string, string>,
  storedSecretHeaders: readonly string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(next)) {
    if (value !== HEADER_MASK) {
      out[name] = value;
      continue;
    }
    const lower = name.toLowerCase();
    const kept = Object.entries(stored).find(([n]) => n.toLowerCase() === lower && isSecretHeader(n, storedSecretHeaders));
    out[name] = kept ? kept[1] : value;
  }
  return out;
}

/** Every problem with `headers` and `secret_headers` (either may be absent: not being changed). */
export function checkCustomHeaders(
  headers: Record<string, unknown> | undefined,
  secretHeaders: readonly unknown[] | undefined,
): FieldError[] {
  const problems: FieldError[] = [];
  if (headers !== undefined) {
    const seen = new Map<string, string>();
    for (const [name, value] of Object.entries(headers)) {
      const field = `headers.${shown(name)}`;
      const nameProblem = headerNameProblem(name);
      if (nameProblem !== null) {
        problems.push({ field, message: nameProblem });
      } else {
        const reserved = reservedReason(name);
        if (reserved !== null) problems.push({ field, message: reserved });
        const first = seen.get(name.toLowerCase());
        if (first !== undefined) {
          problems.push({ field, message: `repeats '${first}' in another case; header names are case-insensitive, keep one` });
        } else {
          seen.set(name.toLowerCase(), name);
        }
      }
      const valueProblem = headerValueProblem(value);
      if (valueProblem !== null) problems.push({ field, message: valueProblem });
    }
  }
  if (secretHeaders !== undefined) {
    const seen = new Set<string>();
    secretHeaders.forEach((name, i) => {
      const field = `secret_headers[${i}]`;
      const problem = typeof name === "string" ? headerNameProblem(name) : "must be a header name";
      if (problem !== null) problems.push({ field, message: problem });
      else if (seen.has((name as string).toLowerCase())) problems.push({ field, message: "is listed twice (names are case-insensitive)" });
      else seen.add((name as string).toLowerCase());
    });
  }
  return problems;
}

function headerNameProblem(name: string): string | null {
  if (name.length === 0) return "is empty; a header name needs at least one character";
  if (name.length > MAX_HEADER_NAME_LENGTH) return `is longer than ${MAX_HEADER_NAME_LENGTH} characters`;
  if (!TOKEN.test(name)) {
    return "is not a valid header name: use letters, digits and ! # $ % & ' * + - . ^ _ ` | ~ only (no spaces, colons or other separators)";
  }
  return null;
}

/** What is wrong with a header value, without quoting it. */
export function headerValueProblem(value: unknown): string | null {
  if (typeof value !== "string") return "must be a string";
  if (value === HEADER_MASK) {
    return `is the mask (${HEADER_MASK}) Sluice shows for a secret value, but there is no stored secret value under this name to keep; send the real value`;
  }
  if (value.length > MAX_HEADER_VALUE_LENGTH) return `value is longer than ${MAX_HEADER_VALUE_LENGTH} characters`;
  if (!VALUE_CHARS.test(value)) {
    return "value holds a character a header value may not have: only visible ASCII, space and tab (no CR, LF, NUL or non-ASCII)";
  }
  if (value !== value.trim()) return "value starts or ends with whitespace, which receivers strip; remove it";
  return null;
}

/** A header name as a field path shows it: long names are cut (the field still identifies it). */
function shown(name: string): string {
  if (name === "") return '""';
  return name.length > MAX_HEADER_NAME_LENGTH ? `${name.slice(0, MAX_HEADER_NAME_LENGTH)}…` : name;
}
