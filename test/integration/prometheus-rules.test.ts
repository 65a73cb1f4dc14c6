import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { findPromtool } from "../../scripts/ensure-deps.mjs";

// The alerting rules users load as is (docs/prometheus/sluice-alerts.yml) are valid rules, and
// their unit tests (sluice-alerts.test.yml: series in, alerts expected out) pass, both by the real
// promtool. Needs neither Sluice nor a database: promtool evaluates the rules on its own.

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const RULES = "docs/prometheus/sluice-alerts.yml";
const RULE_TESTS = "docs/prometheus/sluice-alerts.test.yml";

/** Runs promtool with `args` from the repository root: its exit code and everything it printed. */
function promtool(...args: string[]): { code: number | null; out: string } {
  const bin = findPromtool();
  if (bin === undefined) {
    assert.fail("promtool is not on PATH: run `node scripts/ensure-deps.mjs` (installs Debian's prometheus package)");
  }
  const r = spawnSync(bin, args, { cwd: repoRoot, encoding: "utf8", timeout: 30_000 });
  if (r.error) throw r.error;
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe("Prometheus alerting rules (docs/prometheus)", () => {
  test("promtool check rules accepts them", () => {
    const r = promtool("check", "rules", RULES);
    assert.equal(r.code, 0, `promtool check rules ${RULES}:\n${r.out}`);
  });

  test("promtool test rules passes their unit tests", () => {
    const r = promtool("test", "rules", RULE_TESTS);
    assert.equal(r.code, 0, `promtool test rules ${RULE_TESTS}:\n${r.out}`);
  });

  test("every alert has for, a severity, a summary and a description, and a test that it fires and one that it does not", () => {
    const rules = readFileSync(new URL(`../../${RULES}`, import.meta.url), "utf8");
    const tests = readFileSync(new URL(`../../${RULE_TESTS}`, import.meta.url), "utf8");
    const blocks = rules.split(/^\s*- alert: /m).slice(1);
    assert.ok(blocks.length > 0, "the rules file names alerts");
    // Each alertname in the tests, with whether its exp_alerts was empty (must not fire) or not.
    const cases = [...tests.matchAll(/alertname: (\S+)\s*\n\s*exp_alerts:(.*)/g)].map((m) => ({
      name: m[1]!,
      quiet: m[2]!.trim() === "[]",
    }));
    for (const block of blocks) {
      const name = /^\S+/.exec(block)![0];
      assert.match(block, /^\s+for: \d+[smh]$/m, `${name}: for`);
      assert.match(block, /^\s+severity: (warning|critical)$/m, `${name}: labels.severity`);
      assert.match(block, /^\s+summary: \S/m, `${name}: annotations.summary`);
      assert.match(block, /^\s+description: \S/m, `${name}: annotations.description`);
      assert.ok(
        cases.some((c) => c.name === name && !c.quiet),
        `${name}: ${RULE_TESTS} has a case where it fires`,
      );
      assert.ok(
        cases.some((c) => c.name === name && c.quiet),
        `${name}: ${RULE_TESTS} has a case where it must not fire`,
      );
    }
  });
});
