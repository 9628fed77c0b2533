// Browser test of the staff lists against a real `mandato serve` (target/debug/mandato, or
// MANDATO_BIN) in Debian's Chromium: the mandates and customers lists keep their search,
// filters and order in the URL, so opening a row and going Back (or reloading) finds them as
// they were; the search forgives accents and takes part of an id. Screenshots at 1440 and
// 390 px go to target/ui-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, merchantApi } from "./harness.mjs";

const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const COMMERCE = "76123456-0";

let server;
let browser;
let page;

const merchant = (base, password, apiKey) => merchantApi(base, { commerce: COMMERCE, password, apiKey });

// The address and the count change before the re-sorted page is drawn (the count was already
// right before sorting), so the rows are read until they settle, for at most five seconds, and the
// assertion then shows what they last were.
async function rowsRead(rows, expected) {
  const deadline = Date.now() + 5000;
  let actual = await rows.allInnerTexts();
  while (JSON.stringify(actual) !== JSON.stringify(expected) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    actual = await rows.allInnerTexts();
  }
  assert.deepEqual(actual, expected);
}

const customer = (userId, rut, firstName, lastName) => ({
  customer: {
    userId,
    identificationDocument: { type: "RUT", number: rut },
    personalInformation: { firstName, lastName },
    contacts: { email: `${userId}@example.cl`, phone: "+56912345678" },
  },
});

const mandate = (userId, id) => ({
  customer: { userId },
  mandate: { id, type: "DYNAMIC", name: "Cuenta corriente", charges: { currencyId: "CLP", maxAmount: 100000 } },
});

async function shots(name) {
  for (const width of [1440, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

describe("lists keep their state in the URL", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startServer();
    const added = JSON.parse(
      await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE, "--name", "Gimnasio Los Andes"]),
    );
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create", "--commerce", COMMERCE]));
    const call = await merchant(server.base, added.password, key.apiKey);
    await call("POST", "/user", customer("cust-001", "12.345.678-5", "Ana", "Pérez"));
    await call("POST", "/user", customer("cust-010", "11.222.333-9", "José", "Muñoz"));
    await call("POST", "/user", customer("cust-020", "7.654.321-6", "Luis", "Soto"));
    await call("POST", "/mandate", mandate("cust-001", "GYM-001"));
    await call("POST", "/mandate", mandate("cust-010", "GYM-010"));
    await call("POST", "/mandate", mandate("cust-020", "CTA-020"));

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "es-CL" });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));
    await page.goto(server.base);
    await page.getByRole("heading", { name: "Primer inicio" }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill(OWNER.password);
    await page.getByLabel(/^Repita la contraseña/).fill(OWNER.password);
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByRole("heading", { name: "Panel" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("mandates: search without accents and an order survive opening a row, Back and reload", async () => {
    await page.goto(`${server.base}/mandates`);
    await page.getByTestId("result-count").getByText("3 mandatos").waitFor();
    await page.getByTestId("mandate-search").fill("munoz");
    await page.waitForURL(/q=munoz/);
    await page.getByTestId("result-count").getByText("1 mandatos").waitFor();
    await page.getByRole("link", { name: "GYM-010" }).waitFor();

    // A part of an id, and the order by mandateId.
    await page.getByTestId("mandate-search").fill("gym-0");
    await page.waitForURL(/q=gym-0/);
    await page.getByTestId("mandate-sort").click();
    await page.getByRole("option", { name: "Id del mandato Z–A" }).click();
    await page.waitForURL(/sort=mandateId.desc/);
    await page.getByTestId("result-count").getByText("2 mandatos").waitFor();
    await rowsRead(page.getByTestId("mandates-table").getByRole("link").filter({ hasText: /^GYM-/ }), ["GYM-010", "GYM-001"]);
    await shots("mandates");

    await page.getByRole("link", { name: "GYM-001" }).click();
    await page.waitForURL(/\/mandates\/man_/);
    await page.goBack();
    await page.waitForURL(/q=gym-0/);
    assert.equal(await page.getByTestId("mandate-search").inputValue(), "gym-0");
    assert.match(page.url(), /sort=mandateId.desc/);
    await page.getByTestId("result-count").getByText("2 mandatos").waitFor();

    await page.reload();
    assert.equal(await page.getByTestId("mandate-search").inputValue(), "gym-0");
    await page.getByTestId("result-count").getByText("2 mandatos").waitFor();
  });

  test("mandates: dates are typed and shown as dd-mm-aaaa", async () => {
    await page.goto(`${server.base}/mandates`);
    const today = new Intl.DateTimeFormat("en-CA", { timeZone: "America/Santiago" }).format(new Date());
    const spanish = today.split("-").reverse().join("-");
    await page.getByTestId("filter-from").fill(spanish);
    await page.getByTestId("filter-from").press("Enter");
    await page.waitForURL(new RegExp(`createdFrom=${today}`));
    await page.getByTestId("result-count").getByText("3 mandatos").waitFor();
    await page.getByTestId("filter-to").fill("31-02-2026");
    await page.getByTestId("filter-to").press("Enter");
    await page.getByText("Fecha no válida: use dd-mm-aaaa").waitFor();
    assert.doesNotMatch(page.url(), /createdTo/);
  });

  test("customers: partial id and accent-free name, sorted, kept after Back", async () => {
    await page.goto(`${server.base}/customers`);
    await page.getByTestId("result-count").getByText("3 clientes").waitFor();
    await page.getByTestId("customer-search").fill("cust-01");
    await page.waitForURL(/q=cust-01/);
    await page.getByTestId("result-count").getByText("1 clientes").waitFor();
    await page.getByRole("link", { name: "José Muñoz" }).waitFor();

    await page.getByTestId("customer-search").fill("");
    await page.waitForURL((url) => !url.search.includes("q="));
    await page.getByTestId("customer-sort").click();
    await page.getByRole("option", { name: "Apellido A–Z" }).click();
    await page.waitForURL(/sort=name.asc/);
    await page.getByTestId("result-count").getByText("3 clientes").waitFor();
    await rowsRead(page.getByTestId("customers-table").getByRole("link"), ["José Muñoz", "Ana Pérez", "Luis Soto"]);
    // RUTs are written with dots, on one line, in the list and in a customer's mandates.
    assert.deepEqual(await page.getByTestId("customer-rut").allInnerTexts(), ["11.222.333-9", "12.345.678-5", "7.654.321-6"]);
    assert.equal(await page.getByTestId("customer-rut").first().evaluate((e) => getComputedStyle(e).whiteSpace), "nowrap");
    await shots("customers");

    await page.getByRole("link", { name: "Ana Pérez" }).click();
    await page.waitForURL(/\/customers\/usr_/);
    await page.goBack();
    await page.waitForURL(/sort=name.asc/);
    await rowsRead(page.getByTestId("customers-table").getByRole("link"), ["José Muñoz", "Ana Pérez", "Luis Soto"]);
    // The customer's page links back to the list as it was left.
    await page.getByRole("link", { name: "Ana Pérez" }).click();
    await page.waitForURL(/\/customers\/usr_/);
    await page.getByTestId("back-to-customers").click();
    await page.waitForURL(/\/customers\?.*sort=name.asc/);
    await rowsRead(page.getByTestId("customers-table").getByRole("link"), ["José Muñoz", "Ana Pérez", "Luis Soto"]);

    // The sorted column's header says its order and reverses it.
    const header = page.getByRole("columnheader", { name: /Nombre/ });
    assert.equal(await header.getAttribute("aria-sort"), "ascending");
    await header.getByRole("button").click();
    await page.waitForURL(/sort=name.desc/);
    await page.getByTestId("customers-table").getByRole("link").first().getByText("Luis Soto").waitFor();
  });

  test("a mandateId in the address opens that mandate, and Back skips the list", async () => {
    await page.goto(`${server.base}/customers`);
    await page.goto(`${server.base}/mandates?id=CTA-020`);
    await page.waitForURL(/\/mandates\/man_/);
    await page.goBack();
    await page.waitForURL(/\/customers$/);
    // Where our id is expected, the merchant's mandateId opens the mandate too.
    await page.goto(`${server.base}/mandates/CTA-020`);
    await page.waitForURL(/\/mandates\/man_/);
    await page.locator("h1").first().waitFor();
  });

  test("ledger and audit filters live in the URL too", async () => {
    await page.goto(`${server.base}/ledger`);
    await page.getByTestId("ledger-from").fill("01-11-2026");
    await page.getByTestId("ledger-from").press("Enter");
    await page.waitForURL(/from=2026-11-01/);
    await page.goto(`${server.base}/customers`);
    await page.goBack();
    await page.waitForURL(/from=2026-11-01/);
    assert.equal(await page.getByTestId("ledger-from").inputValue(), "01-11-2026");

    await page.goto(`${server.base}/audit`);
    await page.getByLabel("Quién").fill(OWNER.email);
    await page.waitForURL(/email=duena/);
    await page.reload();
    assert.equal(await page.getByLabel("Quién").inputValue(), OWNER.email);
  });

  test("a list the server cannot be reached for says so in Spanish", async () => {
    await page.route("**/admin/api/customers**", (request) => request.abort("connectionrefused"));
    try {
      await page.goto(`${server.base}/customers`);
      const alert = page.getByRole("alert").filter({ hasText: "No se pudo cargar" });
      await alert.getByText("No se pudo cargar: No se pudo contactar al servidor").waitFor({ timeout: 20_000 });
      assert.doesNotMatch(await alert.innerText(), /fetch|network|failed/i);
    } finally {
      await page.unroute("**/admin/api/customers**");
    }
  });
});
