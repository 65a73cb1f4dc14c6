import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startSluice, type TestSluice } from "../helpers/sluice.js";
import { useBrowser, openPage, signIn, assertAccessible, fitsWidth, PHONE } from "../helpers/browser.js";
import type { Destination } from "../helpers/api-types.js";

// The dashboard in a real browser (Debian's chromium), against a real Sluice on the embedded store.

const browser = useBrowser();
// One Sluice for the file: its start (the embedded store's migrations) is most of a test's time.
let s: TestSluice;
before(async () => {
  s = await startSluice("embedded", { worker: false });
});
after(async () => {
  await s.stop();
});

test("the dashboard signs in with a tenant key and lists destinations with their state", async () => {
  const created = await s.api<Destination>("POST", "/v1/destinations", { name: "orders-service", url: "http://127.0.0.1:9/hook" });
  assert.equal(created.status, 201);
  const { page, context, errors } = await openPage(browser());
  await signIn(page, s.url, s.apiKey);
  const row = page.locator(`tr[data-destination="${created.body.id}"]`);
  await row.getByRole("link", { name: "orders-service" }).waitFor();
  assert.match(await row.innerText(), /active/);
  await assertAccessible(page, "the destinations page");
  assert.deepEqual(errors, []);
  await context.close();
});

test("a wrong key is refused with the API's message, and the page stays usable at 390 px", async () => {
  const { page, context } = await openPage(browser(), PHONE);
  await page.goto(`${s.url}/`);
  await page.getByLabel("API key").fill("sk_not_a_key");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").getByText("SLUICE_AUTH_INVALID_KEY").waitFor();
  assert.ok(await fitsWidth(page), "the sign-in page is wider than a phone");
  await assertAccessible(page, "the sign-in page");
  await context.close();
});
