// What the browser tests share: Debian's Chromium and its flags, where screenshots go, the
// merchant API client they seed data with, and the Santiago business date.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../scripts/server.mjs";

export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
export const FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"];
export const SHOTS = join(repoRoot, "target", "ui-screenshots");
mkdirSync(SHOTS, { recursive: true });

/**
 * The merchant API of one commerce, signed in as a client would be: the eight common headers
 * (a fresh correlationId each call), the API key, and a session token from the JWE login.
 * Answers `call(method, path, body)`, which asserts success and returns the payload.
 */
export async function merchantApi(base, { commerce, password, apiKey }) {
  let token = null;
  const call = async (method, path, body) => {
    const headers = {
      "content-type": "application/json",
      country: "CL",
      commerce,
      channel: "WEB",
      requestDateTime: new Date().toISOString(),
      correlationId: randomUUID(),
      processId: "HYBRID",
      salesExecutiveId: "SE-01",
      "x-api-key": apiKey,
    };
    if (token) headers.authorization = `Bearer ${token}`;
    const r = await fetch(`${base}/api/v1${path}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
    const json = await r.json();
    assert.ok(r.ok, `${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
    return json.payload;
  };
  const key = await (await fetch(`${base}/api/v1/.well-known/jwe-public-key`)).json();
  const { token: jwe } = await call("POST", "/jwe/encrypt", { password, publicKey: key.payload.publicKey });
  token = (await call("POST", "/login", { username: commerce, password: jwe })).token;
  return call;
}

/** The business date (America/Santiago) `daysFromToday` days from today, `YYYY-MM-DD`. */
export function businessDate(daysFromToday) {
  const today = new Intl.DateTimeFormat("en-CA", { timeZone: "America/Santiago" }).format(new Date());
  const d = new Date(`${today}T12:00:00Z`);
  d.setUTCDate(d.getUTCDate() + daysFromToday);
  return d.toISOString().slice(0, 10);
}

/**
 * On a narrow page: the table inside `container` (a locator of its ScrollTable) scrolls
 * sideways in its own box, never the page; the box is a named, focusable region; and the first
 * cell of each row stays in place while the rest scrolls under it. Answers the first body cell's
 * box after the scroll, for further checks.
 */
export async function assertTableScrollsInside(page, container, name) {
  // The layout settles first after a change of width (the navigation bar slides away).
  await container.waitFor();
  await page.waitForTimeout(400);
  assert.equal(await container.getAttribute("role"), "region", `${name}: a region`);
  assert.equal(await container.getAttribute("tabindex"), "0", `${name}: focusable`);
  assert.ok((await container.getAttribute("aria-label"))?.trim(), `${name}: named`);
  const widths = await container.evaluate((box) => ({ scroll: box.scrollWidth, client: box.clientWidth }));
  assert.ok(widths.scroll > widths.client, `${name}: the table is wider than its box (${JSON.stringify(widths)})`);
  // A passing toast may widen the page for a moment; what stays wider is a fault.
  let overflow = 0;
  for (let i = 0; i < 30; i++) {
    overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    if (overflow <= 0) break;
    await page.waitForTimeout(100);
  }
  assert.ok(overflow <= 0, `${name}: the page is ${overflow}px wider than the window, past it: ${await widest(page)}`);
  const firstCell = container.locator("tbody tr td").first();
  assert.equal(await firstCell.evaluate((td) => getComputedStyle(td).position), "sticky", `${name}: first column fixed`);
  const before = await firstCell.boundingBox();
  await container.evaluate((box) => {
    box.scrollLeft = box.scrollWidth;
  });
  await page.waitForTimeout(100);
  const afterScroll = await firstCell.boundingBox();
  assert.ok(Math.abs(afterScroll.x - before.x) < 1, `${name}: the first column moved from ${before.x} to ${afterScroll.x}`);
  const viewport = page.viewportSize();
  assert.ok(afterScroll.x >= 0 && afterScroll.x + afterScroll.width <= viewport.width, `${name}: the first column stays in sight`);
  await container.evaluate((box) => {
    box.scrollLeft = 0;
  });
  return afterScroll;
}

/** The elements that reach past the window's right edge, innermost first, to name in a failure. */
export async function widest(page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const past = [...document.body.querySelectorAll("*")].filter((e) => e.getBoundingClientRect().right > width + 1);
    const innermost = past.filter((e) => !past.some((other) => other !== e && e.contains(other)));
    return innermost
      .slice(0, 5)
      .map((e) => `${e.tagName.toLowerCase()}${e.dataset.testid ? `[${e.dataset.testid}]` : ""} «${(e.textContent ?? "").slice(0, 40)}» ${Math.round(e.getBoundingClientRect().right)}px`)
      .join("; ");
  });
}
