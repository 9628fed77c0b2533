// Browser test of signature-gated activation in Mandato Desk, against a real `mandato serve`
// (target/debug/mandato, or MANDATO_BIN) driven in Debian's Chromium: the owner sets the
// commerce's activation mode in Settings › commerces, the merchant API creates a mandate that
// inherits it, the customer enrols on the Magic Link and signs the mandate document on the
// signing pages, and the mandate's detail shows the mode, the completed signature process and
// the sealed PDF, which downloads as a PDF. Screenshots go to target/ui-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, businessDate, merchantApi } from "./harness.mjs";

const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const COMMERCE = { code: "76123456-0", name: "Gimnasio Firma", password: "clave-secreta-1" };
const RUT = "12.345.678-5";

let server;
let browser;
let page;
const ids = { mandate: "", link: "", process: "" };

async function shot(name) {
  await page.waitForTimeout(150);
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

const merchant = (base, apiKey) =>
  merchantApi(base, { commerce: COMMERCE.code, password: COMMERCE.password, apiKey });

/** Posts a form the way a browser does, without following the redirect. */
async function postForm(url, fields) {
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
    redirect: "manual",
  });
  assert.equal(r.status, 303, `${url}: ${r.status} ${await r.text()}`);
  return r.headers.get("location");
}

let failed = false;
function step(name, fn) {
  test(name, async (t) => {
    if (failed) return t.skip("an earlier step failed");
    try {
      await fn(t);
    } catch (e) {
      failed = true;
      await page?.screenshot({ path: join(SHOTS, "signature-activation-failure.png"), fullPage: true }).catch(() => {});
      throw e;
    }
  });
}

describe("Signature-gated activation in Mandato Desk", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, locale: "es-CL" });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  step("the owner sets the commerce's activation mode to signature", async () => {
    await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE.code, "--name", COMMERCE.name, "--password-stdin"], COMMERCE.password);
    await page.goto(server.base);
    await page.getByRole("heading", { name: "Primer inicio" }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill(OWNER.password);
    await page.getByLabel(/^Repita la contraseña/).fill(OWNER.password);
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByRole("heading", { name: "Panel" }).waitFor();
    await page.getByRole("link", { name: "Configuración" }).click();
    const mode = page.getByTestId(`activation-mode-${COMMERCE.code}`);
    await mode.waitFor();
    assert.equal(await mode.inputValue(), "Directa");
    await mode.click();
    await page.getByRole("option", { name: "Con firma electrónica" }).click();
    await page.getByText("Modo de activación guardado").waitFor();
    await shot("sa-01-settings-activation-mode");
    const shown = JSON.parse(await mandato(server.dataDir, ["--json", "commerce", "show", COMMERCE.code]));
    assert.equal(shown.activationMode, "SIGNATURE");
  });

  step("a mandate inherits it; the customer enrols and signs on the Magic Link", async () => {
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create"]));
    const call = await merchant(server.base, key.apiKey);
    await call("POST", "/user", {
      customer: {
        userId: "cust-001",
        identificationDocument: { type: "RUT", number: RUT },
        personalInformation: { firstName: "Ana", lastName: "Pérez" },
        contacts: { email: "ana@example.cl" },
      },
    });
    const created = await call("POST", "/mandate", {
      customer: { userId: "cust-001" },
      mandate: {
        id: "GYM-FIRMA-1",
        type: "SUBSCRIPTION",
        name: "Plan con firma",
        charges: { currencyId: "CLP", amount: 29990, periodicity: "MONTHLY", startDate: businessDate(7), count: 3 },
      },
      paymentMethods: [3],
    });
    assert.equal(created.mandate.activation, "SIGNATURE");
    ids.mandate = created.mandate.internalId;
    ids.link = created.mandate.magicLink;

    // The customer's page says a signature step follows.
    await page.goto(ids.link);
    await page.getByText("Este mandato requiere su firma electrónica").waitFor();
    await shot("sa-link-01-signature-step");
    const html = await (await fetch(ids.link)).text();
    assert.match(html, /requiere su firma electrónica/);
    const terms = html.match(/name="termsSha256" value="([0-9a-f]{64})"/)[1];
    const signing = await postForm(ids.link, {
      method: "3",
      number: "4111111111111111",
      expiry: "12/35",
      cvv: "123",
      accept: "1",
      termsSha256: terms,
    });
    assert.match(signing, /^\/sign\//);
    const sign = `${server.base}${signing}`;
    await page.goto(ids.link);
    await page.getByRole("link", { name: "Continuar con la firma del mandato" }).waitFor();
    await shot("sa-link-02-signature-pending");
    const pending = await call("GET", `/mandate/internalId/${ids.mandate}`);
    assert.equal(pending.mandate.state.name, "PENDING");
    ids.process = pending.mandate.signature.internalId;

    await postForm(`${sign}/codigo`, { rut: RUT });
    // The sandbox's one-time code, as staff read it (the page's session cookie).
    const detail = await (await page.request.get(`${server.base}/admin/api/signatures/${ids.process}`)).json();
    const code = detail.payload.signatories[0].sandboxCode.code;
    await postForm(`${sign}/verificar`, { codigo: code });
    const back = await postForm(`${sign}/firmar`, { acepto: "si" });
    assert.ok(back.includes("completed=true"), back);
    const active = await call("GET", `/mandate/internalId/${ids.mandate}`);
    assert.equal(active.mandate.state.name, "ACTIVE");
  });

  step("the mandate's detail shows the signature and downloads the sealed PDF", async () => {
    await page.goto(`${server.base}/mandates/${ids.mandate}`);
    await page.getByRole("heading", { name: "Plan con firma" }).waitFor();
    const card = page.getByTestId("mandate-activation");
    await card.getByText("Con firma electrónica").waitFor();
    await card.getByText(ids.process).waitFor();
    await card.getByText("Completado").waitFor();
    const download = card.getByTestId("sealed-pdf");
    await download.waitFor();
    await shot("sa-02-mandate-signature");
    const href = await download.getAttribute("href");
    const pdf = await page.request.get(`${server.base}${href}`);
    assert.equal(pdf.status(), 200);
    assert.equal(pdf.headers()["content-type"], "application/pdf");
    assert.equal((await pdf.body()).subarray(0, 5).toString(), "%PDF-");
    await card.getByTestId("open-signature").click();
    await page.getByText("Documento enviado a firma").waitFor();
    await shot("sa-03-signature-process");
  });
});
