import { test } from "node:test";
import assert from "node:assert/strict";
import type { Destination } from "../../ui/src/api.js";
import { changedFields, fieldKey, fromDestination, toConfig, type FormState, type Problem } from "../../ui/src/components/config-fields.js";

// The dashboard's settings form as its field table makes it (ui/src/components/config-fields.ts):
// what it shows of a destination, the body it sends for what was typed, and beside which input an
// API error goes. The form draws this; the dashboard tests drive it in a browser.

function destination(over: Partial<Destination> = {}): Destination {
  return {
    id: "dst_1",
    name: "erp",
    url: "https://erp.example.com/hooks",
    event_types: ["order.*", "invoice.paid"],
    timeout_seconds: 15,
    max_concurrency: 5,
    ordered: false,
    rate_limit: null,
    adaptive: null,
    delivery_schedule: null,
    retry_schedule_seconds: [10, 60],
    throttle_schedule_seconds: [5],
    probe_interval_seconds: 300,
    replay_on_resume: true,
    paused_retention_hours: 72,
    headers: { "X-Team": "blue", Authorization: "••••••" },
    secret_headers: ["x-team"],
    ...over,
  } as Destination;
}

/** The body sent after `edits` to the form of `d` (edits by field path, as the inputs hold them). */
function sent(d: Destination, edits: FormState, problems: Problem[] = []) {
  const initial = fromDestination(d);
  return changedFields(initial, { ...initial, ...edits }, problems);
}

test("an untouched form sends the destination's config back as it is, and no change sends nothing", () => {
  const d = destination({
    rate_limit: { max_per_second: 2, burst_capacity: 1 },
    adaptive: { enabled: true, max_per_second: 300 },
    delivery_schedule: { timezone: "Europe/Berlin", quiet_start: "22:00", quiet_end: "07:00", days: ["mon", "fri"], applies_to: ["a.*"] },
  });
  assert.deepEqual(toConfig(fromDestination(d)), {
    name: "erp",
    url: "https://erp.example.com/hooks",
    event_types: ["order.*", "invoice.paid"],
    timeout_seconds: 15,
    max_concurrency: 5,
    ordered: false,
    rate_limit: { max_per_second: 2, burst_capacity: 1 },
    adaptive: { enabled: true, max_per_second: 300 },
    delivery_schedule: { timezone: "Europe/Berlin", quiet_start: "22:00", quiet_end: "07:00", days: ["mon", "fri"], applies_to: ["a.*"] },
    retry_schedule_seconds: [10, 60],
    throttle_schedule_seconds: [5],
    probe_interval_seconds: 300,
    paused_retention_hours: 72,
    replay_on_resume: true,
    headers: { "X-Team": "blue", Authorization: "••••••" },
    secret_headers: ["x-team"],
  });
  assert.deepEqual(sent(d, {}), {});
});

test("the form shows each value as its input holds it, with defaults for quiet hours that are off", () => {
  const f = fromDestination(destination());
  assert.equal(f["event_types"], "order.*, invoice.paid");
  assert.equal(f["timeout_seconds"], "15");
  assert.equal(f["rate_limit.max_per_second"], "");
  assert.equal(f["adaptive"], false);
  assert.equal(f["delivery_schedule"], false);
  assert.equal(f["delivery_schedule.timezone"], Intl.DateTimeFormat().resolvedOptions().timeZone);
  assert.equal(f["delivery_schedule.quiet_start"], "22:00");
  assert.equal(f["delivery_schedule.quiet_end"], "07:00");
  assert.deepEqual(f["delivery_schedule.days"], ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]);
  assert.equal(f["headers"], "X-Team: blue\nAuthorization: ••••••");
  // Adaptive pace the API holds but has not enabled shows as off.
  assert.equal(fromDestination(destination({ adaptive: { enabled: false, min_per_second: 4 } }))["adaptive"], false);
});

test("a number is sent as a number when it reads as one, else as typed for the API to refuse; empty clears it", () => {
  assert.deepEqual(sent(destination(), { timeout_seconds: " 30 ", max_concurrency: "many" }), {
    timeout_seconds: 30,
    max_concurrency: "many",
  });
  assert.deepEqual(sent(destination(), { probe_interval_seconds: "" }), { probe_interval_seconds: null });
  assert.deepEqual(sent(destination(), { retry_schedule_seconds: "1, 2 soon", event_types: "" }), {
    retry_schedule_seconds: [1, 2, "soon"],
    event_types: [],
  });
  assert.deepEqual(sent(destination(), { name: " spaced ", url: " https://b.example.com " }), {
    name: " spaced ",
    url: "https://b.example.com",
  });
});

test("a rate limit sends only the bounds typed, and none at all is null", () => {
  assert.deepEqual(sent(destination(), { "rate_limit.max_per_second": "2", "rate_limit.burst_capacity": "1" }), {
    rate_limit: { max_per_second: 2, burst_capacity: 1 },
  });
  const limited = destination({ rate_limit: { max_per_minute: 60 } });
  assert.deepEqual(sent(limited, { "rate_limit.max_per_minute": " " }), { rate_limit: null });
});

test("adaptive pace on sends enabled and the bounds typed; off sends null", () => {
  assert.deepEqual(sent(destination(), { adaptive: true, "adaptive.max_per_second": "0" }), {
    adaptive: { enabled: true, max_per_second: 0 },
  });
  assert.deepEqual(sent(destination({ adaptive: { enabled: true, min_per_second: 3 } }), { adaptive: false }), { adaptive: null });
});

test("quiet hours leave out all seven days and empty lists, send no days as [], and off is null", () => {
  assert.deepEqual(sent(destination(), { delivery_schedule: true, "delivery_schedule.timezone": " Asia/Tokyo " }), {
    delivery_schedule: { timezone: "Asia/Tokyo", quiet_start: "22:00", quiet_end: "07:00" },
  });
  const quiet = destination({ delivery_schedule: { timezone: "UTC", quiet_start: "01:00", quiet_end: "02:00" } });
  assert.deepEqual(sent(quiet, { "delivery_schedule.days": ["sun", "mon"], "delivery_schedule.bypass_event_types": "x.*, y" }), {
    delivery_schedule: {
      timezone: "UTC",
      quiet_start: "01:00",
      quiet_end: "02:00",
      days: ["mon", "sun"],
      bypass_event_types: ["x.*", "y"],
    },
  });
  assert.deepEqual(sent(quiet, { "delivery_schedule.days": [] }), {
    delivery_schedule: { timezone: "UTC", quiet_start: "01:00", quiet_end: "02:00", days: [] },
  });
  assert.deepEqual(sent(quiet, { delivery_schedule: false }), { delivery_schedule: null });
});

test("a header line without a name is a problem of the headers field, found before anything is sent", () => {
  const problems: Problem[] = [];
  const body = sent(destination(), { headers: "X-A: 1\nno colon here\n\n:empty" }, problems);
  assert.deepEqual(problems, [
    { field: "headers", message: 'line 2 is not "Name: value"' },
    { field: "headers", message: 'line 4 is not "Name: value"' },
  ]);
  assert.deepEqual(body.headers, { "X-A": "1" });
});

test("an API error goes beside its field, else its nearest known parent, else to the top", () => {
  assert.equal(fieldKey("rate_limit.max_per_second"), "rate_limit.max_per_second");
  assert.equal(fieldKey("retry_schedule_seconds[2]"), "retry_schedule_seconds");
  assert.equal(fieldKey("delivery_schedule.days[0]"), "delivery_schedule.days");
  assert.equal(fieldKey("adaptive.enabled"), "adaptive");
  assert.equal(fieldKey("rate_limit"), "rate_limit");
  // Header names may hold dots (and brackets): every path under headers is the headers field's.
  assert.equal(fieldKey("headers.x.team[1]"), "headers");
  assert.equal(fieldKey("secret"), null);
  assert.equal(fieldKey("backlog_alert_minutes"), null);
});
