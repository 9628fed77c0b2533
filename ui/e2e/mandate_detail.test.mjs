// Browser test of the mandate detail against a real `mandato serve` (target/debug/mandato, or
// MANDATO_BIN) in Debian's Chromium: the enrolled method and the acceptance evidence in words,
// the EPAC mandate PDF, no Magic Link once active, the payment date capped at today's business
// date, and several installments paid or annulled at once, each refusal named; a declined
// installment says whether and when it is retried, and a UF one the pesos charged and the UF
// value used.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, assertTableScrollsInside, merchantApi } from "./harness.mjs";

const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const COMMERCE = "76123456-0";

let server;
let browser;
let page;
let call;
let mandateId;

const merchant = (base, password, apiKey) => merchantApi(base, { commerce: COMMERCE, password, apiKey });

const today = () => new Intl.DateTimeFormat("en-CA", { timeZone: "America/Santiago" }).format(new Date());
const inDays = (n) => new Date(Date.parse(`${today()}T12:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

const row = (id) => page.locator(`[data-installment="${id}"]`);
/** A business date as the Spanish UI writes it, `dd-mm-aaaa`. */
const spanish = (iso) => iso.split("-").reverse().join("-");

describe("the mandate detail", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    // The refund step charges an installment due today, whatever day today is.
    server = await startServer({ businessDays: "every-day" });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "es-CL", acceptDownloads: true });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));

    const added = JSON.parse(
      await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE, "--name", "Gimnasio Los Andes"]),
    );
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create", "--commerce", COMMERCE]));
    call = await merchant(server.base, added.password, key.apiKey);
    await call("POST", "/user", {
      customer: {
        userId: "cust-001",
        identificationDocument: { type: "RUT", number: "12.345.678-5" },
        personalInformation: { firstName: "Ana", lastName: "Pérez", secondLastName: "Soto" },
        contacts: { email: "ana@example.cl", phone: "+56912345678" },
      },
    });
    const created = await call("POST", "/mandate", {
      customer: { userId: "cust-001" },
      mandate: { id: "CTA-DET-1", type: "DYNAMIC", name: "Cuenta corriente", charges: { currencyId: "CLP", maxAmount: 100000 } },
      installments: [
        { id: "a", amount: 10000, currencyId: "CLP", installmentDueDate: inDays(5) },
        { id: "b", amount: 20000, currencyId: "CLP", installmentDueDate: inDays(10) },
        { id: "c", amount: 30000, currencyId: "CLP", installmentDueDate: inDays(15) },
        { id: "d", amount: 40000, currencyId: "CLP", installmentDueDate: inDays(20) },
      ],
    });
    mandateId = created.mandate.internalId;
    await call("POST", `/sandbox/mandates/${mandateId}/activate`, {
      paymentMethodId: 6,
      bankAccount: { bankCode: "012", accountType: "CHECKING", accountNumber: "123450000", holderRut: "12.345.678-5" },
    });

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

  test("the method, the acceptance and the EPAC document, and no Magic Link once active", async () => {
    await page.goto(`${server.base}/mandates/${mandateId}`);
    await page.getByTestId("payment-method").getByText(/^EPAC: cargo en cuenta con mandato electrónico · .*0000$/).waitFor();
    const acceptance = page.getByTestId("acceptance");
    await acceptance.getByText("Aceptación del cliente").waitFor();
    // The RUT is written with its dots, whatever way it was stored, and never broken.
    await acceptance.getByText("Ana Pérez Soto · 12.345.678-5").waitFor();
    await page.getByText("Gimnasio Los Andes (76.123.456-0)", { exact: false }).first().waitFor();
    const rut = page.getByTestId("customer-rut");
    assert.equal(await rut.innerText(), "12.345.678-5");
    assert.equal(await rut.evaluate((e) => getComputedStyle(e).whiteSpace), "nowrap");
    assert.match(await acceptance.getByTestId("accepted-at").innerText(), /^\d{2}-\d{2}-\d{4} \d{2}:\d{2}/);
    assert.equal(await page.getByTestId("copy-magic-link").count(), 0, "no Magic Link to send once active");

    const [download] = await Promise.all([
      page.waitForEvent("download"),
      acceptance.getByTestId("download-document").click(),
    ]);
    assert.equal(download.suggestedFilename(), "mandato-CTA-DET-1.pdf");
    const pdf = await download.createReadStream();
    const chunks = [];
    for await (const chunk of pdf) chunks.push(chunk);
    assert.equal(Buffer.concat(chunks).subarray(0, 5).toString(), "%PDF-");
    await page.screenshot({ path: join(SHOTS, "mandate-detail-1440.png"), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId("acceptance").waitFor();
    await page.screenshot({ path: join(SHOTS, "mandate-detail-390.png"), fullPage: true });
    // On a phone each table scrolls in its own box; an installment's id and amount stay in
    // sight beside its buttons.
    await assertTableScrollsInside(page, page.getByRole("region", { name: "Eventos" }), "events");
    const installments = page.getByRole("region", { name: "Cuotas" });
    await assertTableScrollsInside(page, installments, "installments");
    for (const part of [row("a").getByTestId("installment-id"), row("a").getByTestId("installment-amount"), row("a").getByTestId("mark-paid")]) {
      const box = await part.boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `${await part.innerText()} is out of sight at ${box?.x}`);
    }
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  test("two installments paid at once, dated today at the latest", async () => {
    await page.goto(`${server.base}/mandates/${mandateId}`);
    await row("a").getByTestId("select-installment").check();
    await row("b").getByTestId("select-installment").check();
    await page.getByTestId("pay-selected").click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("Marcar pagadas 2 cuotas").waitFor();
    // The date is written as the hint writes it (dd-mm-aaaa), and sent as ISO.
    const date = dialog.getByTestId("pay-date");
    assert.equal(await date.getAttribute("data-max"), today());
    assert.notEqual(await date.getAttribute("type"), "date", "not the browser's picker, which writes dates its own way");
    assert.equal(await date.inputValue(), spanish(today()));
    await dialog.getByText(`Hasta hoy, ${spanish(today())}`).first().waitFor();
    await date.fill("31-02-2026");
    await date.press("Tab");
    await dialog.getByText("Fecha no válida: use dd-mm-aaaa").waitFor();
    await date.fill(spanish(inDays(1)));
    await date.press("Tab");
    assert.equal(await dialog.getByText(`Hasta hoy, ${spanish(today())}`).count(), 2, "a future date is refused under the field");
    await date.fill(spanish(today()));
    await date.press("Tab");
    await dialog.getByText("Fecha no válida: use dd-mm-aaaa").waitFor({ state: "detached" });
    await dialog.getByText(/cubre las cuotas a, b/).waitFor();
    await dialog.getByTestId("pay-submit").click();
    await dialog.waitFor({ state: "detached" });
    await row("a").getByText("Pagada").waitFor();
    await row("b").getByText("Pagada").waitFor();
    // The payment's evidence as labelled fields, the method in words, the date as Spanish writes it.
    const toggle = row("a").getByTestId("installment-history-toggle");
    assert.equal(await toggle.getAttribute("aria-expanded"), "false");
    await toggle.click();
    assert.equal(await toggle.getAttribute("aria-expanded"), "true");
    const evidence = page.getByTestId("manual-payment");
    assert.equal(await evidence.getByTestId("manual-payment-method").innerText(), "Transferencia");
    assert.equal(await evidence.getByTestId("manual-payment-date").innerText(), spanish(today()));
    assert.equal(await evidence.getByTestId("manual-payment-amount").innerText(), "$30.000");
    assert.ok(!(await evidence.innerText()).includes("{"), "no JSON");
  });

  test("new installments take their due date as Spanish writes it, and a mistyped one is named", async () => {
    await page.goto(`${server.base}/mandates/${mandateId}`);
    await page.getByTestId("add-installments").click();
    const dialog = page.getByRole("dialog");
    const due = dialog.getByTestId("add-due-date");
    assert.equal(await due.inputValue(), spanish(today()));
    // On a phone the row's fields stack, the date whole inside the dialog.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    const box = await due.boundingBox();
    const content = await dialog.boundingBox();
    assert.ok(box.x + box.width <= content.x + content.width, `the date ends at ${box.x + box.width}, the dialog at ${content.x + content.width}`);
    assert.ok(box.width >= 120, `the date field is ${box.width}px wide`);
    await page.setViewportSize({ width: 1440, height: 900 });
    await dialog.getByLabel(/^Id de la cuota/).fill("e");
    await dialog.getByLabel(/^Monto \(CLP\)/).fill("5.000");
    await due.fill("32-13-2026");
    await due.press("Tab");
    await dialog.getByText("Fecha no válida: use dd-mm-aaaa").waitFor();
    await dialog.getByTestId("add-submit").click();
    await page.waitForTimeout(300);
    assert.equal(await row("e").count(), 0, "nothing is sent while the date is wrong");
    await due.fill(spanish(inDays(25)));
    await due.press("Tab");
    await dialog.getByTestId("add-submit").click();
    await dialog.waitFor({ state: "detached" });
    await row("e").getByText(spanish(inDays(25))).waitFor();
  });

  test("an annulment of several is refused whole, naming the installment that cannot", async () => {
    await page.goto(`${server.base}/mandates/${mandateId}`);
    await row("c").getByTestId("select-installment").check();
    await row("d").getByTestId("select-installment").check();
    // Meanwhile d is paid through the merchant API: the page still offers to annul it.
    await call("PUT", "/installments/status/change", {
      product: { id: "CTA-DET-1" },
      installments: { ids: ["d"] },
      action: "PAYMENT",
      payment: { date: today(), amount: 40000, currencyId: "CLP" },
    });
    await page.getByTestId("annul-selected").click();
    await page.getByRole("dialog").getByRole("button", { name: "Anular" }).click();
    const refusals = page.getByTestId("refusals");
    await refusals.getByText("No se cambió ninguna cuota").waitFor();
    await refusals.getByText("Cuota d: está Pagada y no puede quedar Anulada").waitFor();
    await row("c").getByText("Pendiente").waitFor();
    await page.screenshot({ path: join(SHOTS, "mandate-detail-refused-1440.png"), fullPage: true });
    // d has left the selection: c alone can be annulled now.
    await page.getByTestId("annul-selected").getByText("Anular (1)").waitFor();
    await page.getByTestId("annul-selected").click();
    await page.getByRole("dialog").getByRole("button", { name: "Anular" }).click();
    await row("c").getByText("Anulada").waitFor();
    await page.getByTestId("refusals").waitFor({ state: "detached" });
  });

  test("a card charge is refunded with a reason, and the installment is reversed", async () => {
    const created = await call("POST", "/mandate", {
      customer: { userId: "cust-001" },
      mandate: { id: "CTA-CARD-1", type: "DYNAMIC", name: "Plan tarjeta", charges: { currencyId: "CLP", maxAmount: 100000 } },
      installments: [{ id: "t1", amount: 15990, currencyId: "CLP", installmentDueDate: today() }],
    });
    const cardMandate = created.mandate.internalId;
    await call("POST", `/sandbox/mandates/${cardMandate}/activate`, {
      paymentMethodId: 3,
      card: { number: "4111111111111111", expiry: "12/30", cvv: "123" },
    });
    await call("POST", "/sandbox/charging/run", {});
    await page.goto(`${server.base}/mandates/${cardMandate}`);
    await row("t1").getByText("Pagada").waitFor();
    await row("t1").getByTestId("refund").click();
    await page.getByTestId("confirm-refund").click();
    await page.getByText("largo no es válido").first().waitFor();
    await page.getByTestId("refund-reason").fill("El cliente pidió la devolución");
    await page.getByTestId("confirm-refund").click();
    await page.getByText("Cuota t1 reembolsada").first().waitFor();
    await row("t1").getByText("Reversada").waitFor();
    assert.equal(await row("t1").getByTestId("refund").count(), 0, "no second refund");
    await page.screenshot({ path: join(SHOTS, "mandate-detail-refunded-1440.png"), fullPage: true });
  });

  test("a decline says whether it is retried, and a UF charge shows its pesos and UF value", async () => {
    const mandateWith = async (id, currencyId, amount, number) => {
      const created = await call("POST", "/mandate", {
        customer: { userId: "cust-001" },
        mandate: { id, type: "DYNAMIC", name: "Plan", charges: { currencyId } },
        installments: [{ id: "x1", amount, currencyId, installmentDueDate: today() }],
      });
      await call("POST", `/sandbox/mandates/${created.mandate.internalId}/activate`, {
        paymentMethodId: 3,
        card: { number, expiry: "12/30", cvv: "123" },
      });
      return created.mandate.internalId;
    };
    // Insufficient funds is retried the next day; an expired card never is.
    const soft = await mandateWith("CTA-SOFT", "CLP", 12000, "4000000000000002");
    const hard = await mandateWith("CTA-HARD", "CLP", 13000, "4000000000000069");
    const uf = await mandateWith("CTA-UF", "CLF", 1.5, "4111111111111111");
    const csv = join(server.dataDir, "uf.csv");
    writeFileSync(csv, `date,value\n${today()},39123.45\n`);
    await mandato(server.dataDir, ["uf", "import", csv]);
    await call("POST", "/sandbox/charging/run", {});

    await page.goto(`${server.base}/mandates/${soft}`);
    await row("x1").getByText("Fondos insuficientes", { exact: true }).waitFor();
    await row("x1").getByTestId("retry").getByText(`Se reintenta el ${spanish(inDays(1))}`).waitFor();

    await page.goto(`${server.base}/mandates/${hard}`);
    await row("x1").getByText("Tarjeta vencida").waitFor();
    await row("x1").getByTestId("retry").getByText("No se volverá a intentar", { exact: false }).waitFor();
    assert.ok(!(await row("x1").innerText()).includes("se reintenta"), "a final decline promises no retry");

    await page.goto(`${server.base}/mandates/${uf}`);
    await row("x1").getByText("Pagada").waitFor();
    const charge = row("x1").getByTestId("uf-charge");
    await charge.getByText("Cobrado $58.685", { exact: false }).waitFor();
    assert.match(await charge.innerText(), new RegExp(`UF del ${spanish(today())}: \\$39\\.123,45`));
    assert.match(await row("x1").getByTestId("installment-amount").innerText(), /^UF 1,5000/);
  });
});
