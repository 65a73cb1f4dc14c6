import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { after, before } from "node:test";
import assert from "node:assert/strict";
import { findChromium } from "../../scripts/ensure-deps.mjs";

// A real browser for the dashboard tests: Debian's chromium (installed by `npm test`'s
// ensure-deps, never downloaded), driven by playwright-core. One browser per test file, a fresh
// context (own sessionStorage) per test.

// Without these, Chromium on a closed network spends its start reaching Google's services.
const QUIET_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-default-apps",
  "--disable-dev-shm-usage",
];

export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };

/** Starts one headless Chromium for the test file; `browser()` gives it to the tests. */
export function useBrowser(): () => Browser {
  let b: Browser | undefined;
  before(async () => {
    const executablePath = findChromium();
    assert.ok(executablePath, "no chromium found: npm test installs Debian's chromium (scripts/ensure-deps.mjs)");
    b = await chromium.launch({ executablePath, headless: true, args: QUIET_FLAGS });
  });
  after(async () => {
    await b?.close();
  });
  return () => {
    assert.ok(b, "the browser did not start");
    return b;
  };
}

/**
 * A new page in its own context. Browser console errors and failed requests are collected, so a
 * test can assert the page ran clean.
 */
export async function openPage(browser: Browser, viewport = DESKTOP): Promise<{ page: Page; context: BrowserContext; errors: string[] }> {
  const context = await browser.newContext({ viewport, reducedMotion: "reduce" });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  page.setDefaultTimeout(15_000);
  return { page, context, errors };
}

/** Signs in through the sign-in form with an API key, and waits for the destinations page. */
export async function signIn(page: Page, baseUrl: string, key: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Destinations" }).waitFor();
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/** Runs axe-core on the page as it is now; returns the serious and critical violations. */
export async function seriousA11yViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the DevTools protocol, which the page's CSP (script-src 'self') does not
  // govern; a <script> tag would be refused, as it should be.
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: AxeViolation[] }> } }).axe;
    const r = await axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => ({ target: n.target, failureSummary: n.failureSummary })),
    }));
  });
  return result.filter((v) => v.impact === "serious" || v.impact === "critical");
}

/** Fails with axe's own words when the page has serious or critical accessibility violations. */
export async function assertAccessible(page: Page, what: string): Promise<void> {
  const violations = await seriousA11yViolations(page);
  assert.deepEqual(
    violations.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(" ")).join("; ")}`),
    [],
    `axe-core found serious accessibility violations on ${what}`,
  );
}

/** Saves a screenshot to docs/images/<name>.png when SLUICE_SCREENSHOTS=1 (they are committed, not made on every run). */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.SLUICE_SCREENSHOTS !== "1") return;
  const dir = path.resolve(import.meta.dirname, "..", "..", "docs", "images");
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}

/** True when nothing on the page is wider than the viewport (no sideways scrolling of the page itself). */
export async function fitsWidth(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1);
}
