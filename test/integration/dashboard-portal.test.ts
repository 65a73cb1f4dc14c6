import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Frame, Page } from "playwright-core";
import { FEATURE_BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import { useBrowser, openPage, signIn, assertAccessible, screenshot, fitsWidth, PHONE } from "../helpers/browser.js";
import type { Delivery, Destination, EventAccepted, Page as ApiPage } from "../helpers/api-types.js";
import type { PortalSessionCreated } from "../../src/schemas/portal-sessions.js";
import type { Static } from "@sinclair/typebox";

// The consumer portal in a real browser: a link made with POST /v1/portal-sessions opens without
// a sign-in, shows only its destinations, cannot reach another one (neither through the page nor
// through the API with the same token), hides actions when read-only, takes the session's theme,
// and may be framed only by the origins SLUICE_PORTAL_FRAME_ANCESTORS names.

type Created = Static<typeof PortalSessionCreated>;
const browser = useBrowser();

/** A page on its own origin that frames `src` (the embedding platform's page). */
async function startFrameHost(): Promise<{ origin: string; frame: (src: string) => void; close: () => Promise<void> }> {
  let src = "about:blank";
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(
      `<!doctype html><html lang="en"><title>Platform</title><h1>Your webhooks</h1>` +
        `<iframe title="Webhook portal" src="${src}" style="width:1200px;height:800px;border:0"></iframe></html>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    frame: (s) => {
      src = s;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Opens a portal link in a fresh tab and waits for its destinations list. */
async function openPortal(url: string, viewport = { width: 1280, height: 900 }) {
  const opened = await openPage(browser(), viewport);
  await opened.page.goto(url);
  await opened.page.getByRole("heading", { level: 1, name: "Destinations" }).waitFor();
  return opened;
}

/** Console noise the portal causes on purpose: the 404 of a destination outside its scope. */
const unexpected = (errors: string[]) => errors.filter((e) => !/status of 404/.test(e));

for (const backend of FEATURE_BACKENDS) {
  describe(`the portal on ${backend} Postgres`, () => {
    let s: TestSluice;
    let rx: Receiver;
    let allowed: Awaited<ReturnType<typeof startFrameHost>>;
    let refused: Awaited<ReturnType<typeof startFrameHost>>;
    let a: Destination, b: Destination;
    let dlvB: Delivery;

    before(async () => {
      allowed = await startFrameHost();
      refused = await startFrameHost();
      s = await startSluice(backend, { worker: true, env: { SLUICE_PORTAL_FRAME_ANCESTORS: allowed.origin } });
      rx = await startReceiver({ status: 200 });
      const create = async (name: string) => {
        const res = await s.api<Destination>("POST", "/v1/destinations", { name, url: `${rx.url}/${name}` });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        return res.body;
      };
      a = await create("customer-a-orders");
      b = await create("customer-b-orders");
      for (const d of [a, b]) {
        const ev = await s.api<EventAccepted>("POST", "/v1/events", {
          type: "order.paid",
          payload: { to: d.name },
          destination_ids: [d.id],
        });
        assert.equal(ev.status, 202, JSON.stringify(ev.body));
      }
      await waitFor(async () => {
        const all = (await s.api<ApiPage<Delivery>>("GET", "/v1/deliveries")).body.data;
        return all.length === 2 && all.every((d) => d.status === "delivered");
      });
      dlvB = (await s.api<ApiPage<Delivery>>("GET", `/v1/deliveries?destination_id=${b.id}`)).body.data[0]!;
    });
    after(async () => {
      await rx?.close();
      await s?.stop();
      await allowed?.close();
      await refused?.close();
    });

    const session = async (body: Record<string, unknown>) => {
      const res = await s.api<Created>("POST", "/v1/portal-sessions", body);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.match(res.body.url, /\/portal#token=/);
      return res.body;
    };

    test("a portal link shows only its destinations and cannot reach another one, in the page or through the API", async () => {
      const link = await session({ destination_ids: [a.id] });
      const { page, context, errors } = await openPortal(link.url);
      // No sign-in form, and the token is out of the address bar (and so out of history and bookmarks).
      assert.equal(await page.getByLabel("API key").count(), 0);
      assert.ok(!page.url().includes("token="), `the token stayed in the URL: ${page.url()}`);
      await page.locator(`tr[data-destination="${a.id}"]`).waitFor();
      assert.equal(await page.locator(`tr[data-destination="${b.id}"]`).count(), 0, "the portal lists another destination");
      assert.equal(await page.getByText("customer-b-orders").count(), 0);
      await assertAccessible(page, "the portal's destinations page");
      await screenshot(page, "portal");

      // Its own destination opens, with actions (not read-only); B's answers as if it did not exist.
      await page.goto(`${link.url.split("#")[0]}#/destinations/${a.id}`);
      await page.getByRole("heading", { level: 1, name: "customer-a-orders" }).waitFor();
      await page.getByRole("button", { name: "Pause", exact: true }).waitFor();
      await assertAccessible(page, "a destination in the portal");
      // …in words for the visitor, who holds a link and no API key.
      await page.goto(`${link.url.split("#")[0]}#/destinations/${b.id}`);
      const outside = page.getByRole("alert").filter({ hasText: "This destination is not part of this portal link" });
      await outside.first().waitFor();
      assert.match((await outside.first().textContent()) ?? "", /Ask the service that gave you this link for one that includes it/);
      await page.goto(`${link.url.split("#")[0]}#/deliveries/${dlvB.id}`);
      await page.getByRole("alert").filter({ hasText: "This delivery is not part of this portal link" }).first().waitFor();
      const shown = (await page.locator("main").textContent()) ?? "";
      assert.doesNotMatch(shown, /API key|tenant|SLUICE_[A-Z_]+_NOT_FOUND/, `the portal spoke to an API user: ${shown}`);
      assert.equal(await page.getByText("customer-b-orders").count(), 0, "B's name leaked into the portal");
      assert.deepEqual(unexpected(errors), []);
      await context.close();

      // A key holder in the dashboard still reads the API's own words, code included.
      const dash = await openPage(browser());
      await signIn(dash.page, s.url, s.apiKey);
      await dash.page.goto(`${s.url}/#/destinations/dst_nope`);
      const apiWords = dash.page.getByRole("alert").filter({ hasText: "SLUICE_DESTINATION_NOT_FOUND" });
      await apiWords.first().waitFor();
      assert.match((await apiWords.first().textContent()) ?? "", /exists for this API key/);
      await dash.context.close();

      // The same token through the API: B's objects are 404, publishing is 403.
      const asPortal = (method: string, path: string, body?: unknown) => s.api(method, path, body, { key: link.token });
      assert.equal((await asPortal("GET", `/v1/destinations/${a.id}`)).status, 200);
      for (const path of [
        `/v1/destinations/${b.id}`,
        `/v1/destinations/${b.id}/attempts`,
        `/v1/deliveries/${dlvB.id}`,
        `/v1/deliveries/${dlvB.id}/attempts`,
      ]) {
        assert.equal((await asPortal("GET", path)).status, 404, `GET ${path} with A's portal token`);
      }
      const listed = await asPortal("GET", `/v1/deliveries?destination_id=${b.id}`);
      assert.ok(
        listed.status === 404 || (listed.status === 200 && (listed.body as ApiPage<Delivery>).data.length === 0),
        `B's deliveries listed through A's portal: ${JSON.stringify(listed.body)}`,
      );
      const published = await asPortal("POST", "/v1/events", { type: "order.paid", payload: {}, destination_ids: [a.id] });
      assert.equal(published.status, 403, JSON.stringify(published.body));
    });

    test("a read-only link hides the actions and takes the session's theme", async () => {
      const link = await session({ destination_ids: [a.id], read_only: true, theme: { accent: "#aa3300" } });
      const { page, context, errors } = await openPortal(link.url);
      const accent = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue("--accent").trim());
      assert.equal(accent, "#aa3300");
      await page.goto(`${link.url.split("#")[0]}#/destinations/${a.id}`);
      await page.getByRole("heading", { level: 1, name: "customer-a-orders" }).waitFor();
      await page.getByRole("region", { name: "Attempts", exact: true }).waitFor();
      for (const action of ["Pause", "Resume", "Edit settings", "Rotate secret", "Recover"]) {
        assert.equal(await page.getByRole("button", { name: action, exact: true }).count(), 0, `a read-only portal offers "${action}"`);
      }
      assert.deepEqual(unexpected(errors), []);
      await context.close();

      const phone = await openPortal(link.url, PHONE);
      assert.ok(await fitsWidth(phone.page), "the portal is wider than a phone");
      await assertAccessible(phone.page, "the portal at 390 px");
      await phone.context.close();
    });

    test("the portal may be framed by the allowed origin only", async () => {
      const link = await session({ destination_ids: [a.id] });
      const portalPage = await fetch(`${s.url}/portal`);
      const csp = portalPage.headers.get("content-security-policy") ?? "";
      assert.match(csp, new RegExp(`frame-ancestors [^;]*${allowed.origin.replace(/[.:/]/g, "\\$&")}`));
      assert.ok(!csp.includes(refused.origin));
      const dashboardPage = await fetch(`${s.url}/`);
      assert.match(dashboardPage.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);

      const { page, context } = await openPage(browser());
      allowed.frame(link.url);
      await page.goto(`${allowed.origin}/`);
      const framed = page.frameLocator("iframe");
      await framed.getByRole("heading", { level: 1, name: "Destinations" }).waitFor();
      await framed.locator(`tr[data-destination="${a.id}"]`).waitFor();

      refused.frame(link.url);
      await page.goto(`${refused.origin}/`);
      // Chromium swaps a refused frame for its own error page, so the portal never renders there.
      const frame = await portalFrame(page);
      await waitFor(() => frame.url().startsWith("chrome-error:"), {
        timeoutMs: 10_000,
        message: () => `a refused origin framed the portal (the frame is at ${frame.url()})`,
      });
      assert.equal(await frame.getByRole("heading", { name: "Destinations" }).count(), 0);
      await context.close();
    });
  });
}

async function portalFrame(page: Page): Promise<Frame> {
  const el = await page.waitForSelector("iframe");
  const frame = await el.contentFrame();
  assert.ok(frame, "no frame");
  return frame;
}
