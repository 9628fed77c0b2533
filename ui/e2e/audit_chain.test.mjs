// Browser test of the staff audit's chain check: after the first start the Audit screen's
// "Verificar cadena" finds the chain intact; a record changed in the database file is then
// named there, and in Settings › Environment, by its number.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { startServer } from "../scripts/server.mjs";
import { CHROMIUM } from "./harness.mjs";

const FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"];
const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };

let server;
let browser;
let page;

describe("the audit chain check", { concurrency: false }, () => {
  before(async () => {
    server = await startServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, locale: "es-CL" });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("an intact chain, then a changed record named by its number", async () => {
    await page.goto(server.base);
    await page.getByRole("heading", { name: "Primer inicio" }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill(OWNER.password);
    await page.getByLabel(/^Repita la contraseña/).fill(OWNER.password);
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByRole("heading", { name: "Panel" }).waitFor();

    await page.getByRole("link", { name: "Auditoría" }).click();
    await page.getByTestId("verify-audit-chain").click();
    const result = page.getByTestId("audit-chain-result");
    await result.getByText(/^Cadena íntegra \(\d+ registros\)$/).waitFor();

    // The setup's record, changed behind the engine's back.
    execFileSync("sqlite3", [
      join(server.dataDir, "mandato.db"),
      "UPDATE staff_audit SET staff_email = 'otra@gimnasio.cl' WHERE seq = 1",
    ]);
    await page.getByTestId("verify-audit-chain").click();
    await result.getByText(/^Cadena rota en el registro 1 \(/).waitFor();
    assert.match(await result.innerText(), /el registro fue modificado/);

    await page.goto(`${server.base}/settings?tab=environment`);
    await page.getByTestId("verify-audit-chain").click();
    await page.getByTestId("audit-chain-result").getByText(/^Cadena rota en el registro 1 \(/).waitFor();
  });
});
