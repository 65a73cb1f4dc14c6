import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { HEADER_MASK as API_MASK } from "../../src/policy/custom-headers.js";
import {
  HEADER_MASK,
  SECRET_PLACEHOLDER,
  SIGNATURE_PLACEHOLDER,
  TIMESTAMP_PLACEHOLDER,
  bodyFor,
  curlFor,
  redactUrl,
  shellQuote,
  type CurlRequest,
} from "../../ui/src/curl.js";

// The command is checked by a real shell: `curl` is replaced by a function that prints each
// argument it got, NUL-separated, so quoting is proved by what sh hands to curl.
function argsOf(command: string): string[] {
  const out = execFileSync("sh", ["-c", `curl() { for a in "$@"; do printf '%s\\0' "$a"; done; }\n${command}`], { encoding: "utf8" });
  return out.split("\0").slice(0, -1);
}

function echoed(word: string): string {
  return execFileSync("sh", ["-c", `printf '%s' ${word}`], { encoding: "utf8" });
}

const REQUEST: CurlRequest = {
  url: "https://hooks.example.com/in?team=a",
  eventId: "evt_123",
  type: "order.created",
  occurredAt: "2024-05-01T12:00:00.000Z",
  payload: { id: 7, note: 'it\'s "fine"\nreally $HOME `id` \\ !' },
  headers: { "x-team": "blue", authorization: API_MASK, "x-api-key": API_MASK, "x-plain-but-secret": "leaked-value" },
  secretHeaders: ["X-Plain-But-Secret"],
  timestampSeconds: 1714564800,
};

test("the mask is the API's", () => {
  assert.equal(HEADER_MASK, API_MASK);
});

test("shellQuote survives quotes, newlines and shell syntax", () => {
  for (const s of ["it's", "'", "''", "a\nb", '$HOME `id` \\ "x" !', "", "tab\there"]) {
    assert.equal(echoed(shellQuote(s)), s);
  }
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
});

test("the shell hands curl a POST with Sluice's headers and body", () => {
  const args = argsOf(curlFor(REQUEST));
  assert.deepEqual(args, [
    "-X",
    "POST",
    "https://hooks.example.com/in?team=a",
    "-H",
    "x-team: blue",
    "-H",
    `authorization: ${SECRET_PLACEHOLDER}`,
    "-H",
    `x-api-key: ${SECRET_PLACEHOLDER}`,
    "-H",
    `x-plain-but-secret: ${SECRET_PLACEHOLDER}`,
    "-H",
    "content-type: application/json",
    "-H",
    "webhook-id: evt_123",
    "-H",
    "webhook-timestamp: 1714564800",
    "-H",
    `webhook-signature: ${SIGNATURE_PLACEHOLDER}`,
    "--data-raw",
    bodyFor(REQUEST),
  ]);
});

test("the body is {type, timestamp, data} and round-trips the payload with its quotes and newlines", () => {
  const args = argsOf(curlFor(REQUEST));
  const body = JSON.parse(args[args.length - 1]!) as unknown;
  assert.deepEqual(body, { type: "order.created", timestamp: "2024-05-01T12:00:00.000Z", data: REQUEST.payload });
  assert.equal(
    bodyFor({ type: "a.b", occurredAt: "2024-05-01T12:00:00.000Z", payload: [1, "x"] }),
    '{"type":"a.b","timestamp":"2024-05-01T12:00:00.000Z","data":[1,"x"]}',
  );
});

test("no secret leaks: masked, secret-listed and URL credentials are all placeholders", () => {
  const command = curlFor({ ...REQUEST, url: "https://alice:s3cr3t@hooks.example.com/in" });
  assert.ok(!command.includes("leaked-value"));
  assert.ok(!command.includes(API_MASK));
  assert.ok(!command.includes("s3cr3t"));
  assert.ok(!command.includes("alice"));
  assert.ok(!/whsec_/.test(command));
  assert.equal(argsOf(command)[2], "https://<user>:<password>@hooks.example.com/in");
});

test("redactUrl leaves a URL without user-info alone, and hides a bare token user", () => {
  assert.equal(redactUrl("http://127.0.0.1:8080/a@b?c=d@e"), "http://127.0.0.1:8080/a@b?c=d@e");
  assert.equal(redactUrl("https://tok_abc@example.com/"), "https://<user>:<password>@example.com/");
});

test("without a timestamp the header is a placeholder; quotes in the URL and header values stay intact", () => {
  const args = argsOf(curlFor({ ...REQUEST, url: "https://example.com/it's", headers: { "x-q": "a'b" }, timestampSeconds: undefined }));
  assert.equal(args[2], "https://example.com/it's");
  assert.ok(args.includes("x-q: a'b"));
  assert.ok(args.includes(`webhook-timestamp: ${TIMESTAMP_PLACEHOLDER}`));
});
