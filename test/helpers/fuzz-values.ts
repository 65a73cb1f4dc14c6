// Hostile values for the API fuzz: numbers past every extreme, strings that break encodings and
// parsers, dates at the ends of every calendar, content types that are not JSON, ids that are not
// ids. Plus what valid requests are made of: local URLs, event types that route, real zones.
import { Raw, plainString, type Json, type JsonObject, type Rng } from "./fuzz-gen.js";

/** Event types that A's destinations subscribe to, so that published events are delivered. */
export const EVENT_TYPES = ["order.created", "order.paid", "user.signup", "fz.a", "fz.b", "invoice.finalized"];
export const TYPE_PATTERNS = ["order.*", "order.created", "user.*", "fz.*", "fz.a", "invoice.finalized", "destination.*"];
/** Real zones, with half-hour, 45-minute, DST-of-30-minutes and ±12/14 h offsets. */
export const ZONES = [
  "UTC",
  "Europe/Berlin",
  "America/New_York",
  "Asia/Kolkata",
  "Pacific/Chatham",
  "Australia/Lord_Howe",
  "Etc/GMT+12",
  "Pacific/Kiritimati",
];
/** Zone names that are odd but may pass a check: links, POSIX-style, legacy, offsets, case, bare words. */
export const ODD_ZONES = [
  "Etc/GMT-14",
  "EST5EDT",
  "GMT0",
  "Factory",
  "localtime",
  "posix/Europe/Berlin",
  "right/UTC",
  "America/Argentina/ComodRivadavia",
  "UTC+01:00",
  "+05:30",
  "utc",
  "europe/berlin",
  "Europe/Berlin ",
  "Local",
  "system",
];

/** Every way of saying "not JSON", or JSON oddly: null = no content-type header at all. */
export const CONTENT_TYPES: (string | null)[] = [
  null,
  "",
  "text/plain",
  "text/plain; charset=utf-8",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=xyz",
  "application/octet-stream",
  "application/xml",
  "text/json",
  "application/jsonx",
  "application/vnd.api+json",
  "application/merge-patch+json",
  "*/*",
  "json",
  "APPLICATION/JSON",
  "application/json, text/plain",
  "application/json; charset=latin1",
  "application/json;;",
  "application/json; boundary=\u00ff",
];

/** An arbitrary JSON value (a payload): small, a few levels deep. */
export function randomJson(rng: Rng, depth = 0): Json {
  const kind = depth > 3 ? rng.int(0, 3) : rng.int(0, 5);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.chance(0.5) ? rng.int(-1000, 1_000_000) : rng.next() * 1e6;
    case 3:
      return rng.chance(0.3) ? rng.pick(NASTY_STRINGS) : plainString({ maxLength: 20 }, rng);
    case 4:
      return Array.from({ length: rng.int(0, 4) }, () => randomJson(rng, depth + 1));
    default: {
      const o: JsonObject = {};
      for (let k = rng.int(0, 4); k > 0; k--) o[plainString({ minLength: 1, maxLength: 8 }, rng)] = randomJson(rng, depth + 1);
      return o;
    }
  }
}

/** Written as JSON text, verbatim: "-0", 1e400 and 10^400 do not survive JSON.stringify. */
export const NUMBER_TEXTS = [
  "0",
  "-0",
  "-1",
  "0.5",
  "-0.5",
  "1e-320",
  "5e-324",
  "-5e-324",
  "2.2250738585072014e-308",
  "1e-7",
  "1e308",
  "-1e308",
  "1.7976931348623157e308",
  "1e400",
  "-1e400",
  "9007199254740991",
  "9007199254740992",
  "9007199254740993",
  "-9007199254740993",
  "18446744073709551616",
  "2147483647",
  "2147483648",
  "-2147483649",
  "4294967296",
  "1e21",
  "123456789012345678901234567890",
  "1" + "0".repeat(400),
  "0." + "0".repeat(400) + "1",
  "1.0",
  "1E2",
  "1e+2",
  "100000.00000000001",
];

export const NASTY_STRINGS = [
  "",
  " ",
  "\t",
  "\n",
  "\r\n",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff",
  "a\ud800b",
  "\ud83d",
  "😀",
  "👨‍👩‍👧‍👦",
  "\u202egnp.exe",
  "مرحبا بالعالم",
  "שלום",
  "e\u0301\u0301\u0301\u0301",
  "Z\u0334\u0321\u0322\u031b\u0317\u0318\u0319\u031c\u031d",
  "\ufeff",
  "\u2028\u2029",
  "\u200b",
  "\uffff",
  "\ufffe",
  "\u007f",
  "\u0080",
  "\u00ff",
  "\u0001\u0002\u001f",
  "𝕏𝕐",
  "ﷺ",
  "../../../etc/passwd",
  "%00",
  "%s%n%x",
  "' OR '1'='1",
  "'; DROP TABLE destinations; --",
  "${jndi:ldap://x}",
  "{{7*7}}",
  "<script>alert(1)</script>",
  "null",
  "undefined",
  "NaN",
  "Infinity",
  "-0",
  "true",
  "[]",
  "{}",
  "0x10",
  "1e-320",
  "__proto__",
  "constructor",
  "\\",
  '"',
  "*",
  "order.*",
  "***",
];

export const DATE_TEXTS = [
  "0000-01-01T00:00:00Z",
  "0001-01-01T00:00:00Z",
  "1900-01-01T00:00:00Z",
  "1969-12-31T23:59:59.999999999Z",
  "1970-01-01T00:00:00Z",
  "2038-01-19T03:14:08Z",
  "9999-12-31T23:59:59Z",
  "9999-12-31T23:59:59.999Z",
  "9999-12-31T23:59:59-23:59",
  "0000-01-01T00:00:00+23:59",
  "275760-09-13T00:00:00Z",
  "+275760-09-13T00:00:00Z",
  "-271821-04-20T00:00:00Z",
  "-000001-01-01T00:00:00Z",
  "2024-01-01T00:00:00+23:59",
  "2024-01-01T00:00:00-23:59",
  "2024-01-01T00:00:00+24:00",
  "2024-02-30T00:00:00Z",
  "2024-13-01T00:00:00Z",
  "2024-01-01T24:00:00Z",
  "2024-12-31T23:59:60Z",
  "2024-01-01T00:00:00.1234567890123Z",
  "2024-01-01t00:00:00z",
  "2024-01-01 00:00:00Z",
  "2024-01-01",
  "2024-01-01T00:00:00",
  "now",
  "",
];

export const WRONG_TYPES: Json[] = [null, true, false, 0, 1, -1, "", "x", "123", "true", [], {}, [null], { "": null }];

/** Nesting `depth` deep, as text: JSON.stringify (and any recursive writer) overflows the stack long before 20000. */
export function deepText(depth: number, shape: "array" | "object" | "mixed"): Raw {
  let open: string;
  let close: string;
  if (shape === "array") [open, close] = ["[", "]"];
  else if (shape === "object") [open, close] = ['{"a":', "}"];
  else [open, close] = ['[{"a":', "}]"];
  return new Raw(open.repeat(depth) + "1" + close.repeat(depth), `${shape} nested ${depth} deep`);
}

export function hugeString(rng: Rng): Json {
  const n = rng.pick([1024, 65_536, 300_000, 1_060_000]);
  const unit = rng.pick(["a", "😀", "é", "\u0000", "\\"]);
  const count = Math.max(1, Math.floor(n / Buffer.byteLength(JSON.stringify(unit).slice(1, -1))));
  return new Raw(JSON.stringify(unit.repeat(count)), `string of ${count} × ${JSON.stringify(unit)}`);
}

export function hugeContainer(rng: Rng): Raw {
  if (rng.chance(0.5)) {
    const n = rng.pick([1001, 10_000, 100_000]);
    return new Raw(`[${Array(n).fill("0").join(",")}]`, `array of ${n} zeros`);
  }
  const n = rng.pick([51, 1001, 20_000]);
  return new Raw(`{${Array.from({ length: n }, (_, k) => `"k${k}":${k}`).join(",")}}`, `object with ${n} keys`);
}

/** Query values, already URL-encoded: numbers past every limit, broken escapes, extreme dates. */
export const QUERY_NASTIES = [
  "",
  "-0",
  "0",
  "-1",
  "1e-320",
  "5e-324",
  "1e308",
  "1e400",
  "NaN",
  "Infinity",
  "-Infinity",
  "9007199254740993",
  "99999999999999999999999999999999",
  "1" + "0".repeat(300),
  "0x10",
  "1_000",
  "%205",
  "5%20",
  "%2B5",
  "5.0",
  "5.5",
  "true",
  "null",
  "%5B%5D",
  "%00",
  "%ED%A0%80",
  "%FF",
  "%",
  "a%",
  "%zz",
  "order.%2A",
  "%2A",
  encodeURIComponent("😀"),
  encodeURIComponent("\u202e"),
  ...DATE_TEXTS.map(encodeURIComponent),
  // The body's hostile strings too (but lone surrogates, which have no URL encoding).
  ...NASTY_STRINGS.flatMap((v) => {
    try {
      return [encodeURIComponent(v)];
    } catch {
      return [];
    }
  }),
];

export const randomHex = (rng: Rng, n: number) => Array.from({ length: n }, () => "0123456789abcdef"[rng.int(0, 15)]).join("");

export function randomBase64(rng: Rng, bytes: number): string {
  const buf = Buffer.alloc(bytes);
  for (let k = 0; k < bytes; k++) buf[k] = rng.int(0, 255);
  return buf.toString("base64");
}

export const ID_VARIANTS: ((id: string) => string)[] = [
  (id) => id.toUpperCase(),
  (id) => `${id}%00`,
  (id) => `${id}%20`,
  (id) => `%20${id}`,
  (id) => `${id}/`,
  (id) => id.slice(0, -1),
  (id) => `${id}0`,
  (id) => `${id}%0A`,
];

export function garbageId(rng: Rng, kind: string | undefined): string {
  const k = kind ?? "dst";
  return rng.pick([
    () => `${k}_${"0".repeat(27)}`,
    () => `${k}_${randomHex(rng, 27)}`,
    () => "x".repeat(101),
    () => "x".repeat(5_000),
    () => "x".repeat(20_000),
    () => "%00",
    () => "%ED%A0%80",
    () => "%FF",
    () => "%C0%80",
    () => "%",
    () => "%zz",
    () => "..",
    () => "%2e%2e",
    () => "%2F",
    () => "%20",
    () => "null",
    () => "undefined",
    () => "0",
    () => "-1",
    () => "1e-320",
    () => "NaN",
    () => "%27%20OR%20%271%27%3D%271",
    () => encodeURIComponent("😀"),
    () => encodeURIComponent("\u202e"),
    () => encodeURIComponent("e\u0301\u0301"),
    () => "__proto__",
    () => "constructor",
    () => "*",
  ])();
}
