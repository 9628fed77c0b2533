// Browser test of a card enrolled on Webpay (Transbank Oneclick Mall, CONTRACT 13) against a
// real `mandato serve` and the Transbank stand-in of `transbank-standin.mjs`, in Debian's
// Chromium: the Magic Link shows the terms and "Inscribir tarjeta" and no card field, hands the
// customer to Webpay with the self-submitting form (its one script allowed by hash), the card is
// typed on Webpay's page, and the customer comes back to an active mandate; a cancellation on
// Webpay leaves the mandate pending with the reason; a due installment is paid on Webpay Plus's
// page from the portal. Screenshots go to target/ui-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, businessDate, merchantApi } from "./harness.mjs";
import { CHILD, KEY, MALL, WEBPAY, startTransbank } from "./transbank-standin.mjs";

const COMMERCE = { code: "76123456-0", name: "Gimnasio Los Andes", password: "clave-secreta-1" };

let server;
let transbank;
let browser;
let page;
let call;

async function mandate(id, user, rut, dueIn = 30) {
  await call("POST", "/user", {
    customer: {
      userId: user,
      identificationDocument: { type: "RUT", number: rut },
      personalInformation: { firstName: "Ana", lastName: "Pérez" },
      contacts: { email: "ana@example.cl" },
    },
  });
  const created = await call("POST", "/mandate", {
    customer: { userId: user },
    mandate: { id, type: "DYNAMIC", name: "Plan mensual", charges: { currencyId: "CLP" } },
    paymentMethods: [3, 4],
    installments: [{ id: "c1", amount: 29990, currencyId: "CLP", installmentDueDate: businessDate(dueIn) }],
  });
  return created.mandate;
}

describe("A card enrolled on Webpay", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startServer();
    transbank = await startTransbank();
    await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE.code, "--name", COMMERCE.name, "--password-stdin"], COMMERCE.password);
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create"]));
    call = await merchantApi(server.base, { commerce: COMMERCE.code, password: COMMERCE.password, apiKey: key.apiKey });
    await mandato(
      server.dataDir,
      ["--json", "acquirer", "set", "--commerce", COMMERCE.code, "--rail", "cards", "--kind", "transbank",
        "--mall-code", MALL, "--child-code", CHILD, "--webpay-code", WEBPAY, "--base-url", transbank.base, "--secret-stdin"],
      KEY,
    );
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: "es-CL", isMobile: true });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await transbank?.stop();
  });

  test("the customer types the card on Webpay, never on our page, and comes back active", async () => {
    const created = await mandate("PLAN-WEBPAY", "cust-001", "12.345.678-5");
    await page.goto(created.magicLink);
    await page.getByRole("button", { name: "Inscribir tarjeta" }).waitFor();
    assert.equal(await page.locator('input[name="number"]').count(), 0, "no card field on our page");
    await page.screenshot({ path: join(SHOTS, "webpay-link-390.png"), fullPage: true });
    await page.locator("#webpay-accept").check();
    await page.getByRole("button", { name: "Inscribir tarjeta" }).click();
    // The hand-off page submits itself to Webpay.
    await page.getByRole("heading", { name: "Webpay (stand-in)" }).waitFor();
    assert.ok(page.url().startsWith(transbank.base), page.url());
    await page.locator("#card").fill("4051 8856 0044 6623");
    await page.getByRole("button", { name: "Inscribir" }).click();
    await page.waitForURL((url) => url.href.includes("activado=1"));
    await page.getByText("VISA **** 6623").or(page.getByText("Visa **** 6623")).first().waitFor();
    await page.screenshot({ path: join(SHOTS, "webpay-activated-390.png"), fullPage: true });
    const found = await call("GET", "/mandate/id/PLAN-WEBPAY");
    assert.equal(found.mandate.state.name, "ACTIVE");
    assert.equal(found.paymentMethod.instrument, "Visa **** 6623");
  });

  test("a cancellation on Webpay leaves the mandate pending, with the reason", async () => {
    const created = await mandate("PLAN-CANCEL", "cust-002", "11.111.111-1");
    await page.goto(created.magicLink);
    await page.locator("#webpay-accept").check();
    await page.getByRole("button", { name: "Inscribir tarjeta" }).click();
    await page.getByRole("heading", { name: "Webpay (stand-in)" }).waitFor();
    await page.getByRole("button", { name: "Anular" }).click();
    await page.getByText("Anuló la inscripción en Webpay").waitFor();
    await page.screenshot({ path: join(SHOTS, "webpay-cancelled-390.png"), fullPage: true });
    const found = await call("GET", "/mandate/id/PLAN-CANCEL");
    assert.equal(found.mandate.state.name, "PENDING");
  });

  test("a due installment is paid on Webpay Plus from the portal, never on a card form of ours", async () => {
    const created = await mandate("PLAN-PORTAL", "cust-003", "22.222.222-2", 0);
    await page.goto(created.magicLink);
    await page.locator("#webpay-accept").check();
    await page.getByRole("button", { name: "Inscribir tarjeta" }).click();
    await page.getByRole("heading", { name: "Webpay (stand-in)" }).waitFor();
    await page.locator("#card").fill("4051 8856 0044 6623");
    await page.getByRole("button", { name: "Inscribir" }).click();
    await page.waitForURL((url) => url.href.includes("activado=1"));
    // The portal offers the due installment on Webpay, with no card field here.
    await page.locator("#pagar summary").first().click();
    const pay = page.getByRole("button", { name: /Pagar en Webpay/ });
    await pay.waitFor();
    assert.equal(await page.locator('input[name="number"]').count(), 0, "no card field on our page");
    await page.screenshot({ path: join(SHOTS, "webpay-portal-390.png"), fullPage: true });
    await pay.click();
    await page.getByRole("heading", { name: "Webpay Plus (stand-in)" }).waitFor();
    assert.ok(page.url().startsWith(transbank.base), page.url());
    await page.locator("#card").fill("4051 8856 0044 6623");
    await page.getByRole("button", { name: "Pagar", exact: true }).click();
    await page.waitForURL((url) => url.href.includes("pagada="));
    await page.screenshot({ path: join(SHOTS, "webpay-portal-paid-390.png"), fullPage: true });
    const found = await call("GET", "/mandate/id/PLAN-PORTAL");
    const paid = found.installments.find((i) => i.id === "c1");
    assert.equal(paid.state.name, "PAID");
    assert.equal(paid.authorizationCode, "1213");
    const committed = [...transbank.payments.values()].filter((p) => p.commits === 1);
    assert.equal(committed.length, 1);
    assert.equal(committed[0].amount, 29990);
  });
});
