// Browser test of a bank account authorized on Fintoc Direct Debit (CONTRACT 13) against a real
// `mandato serve` and the Fintoc stand-in of `fintoc-standin.mjs`, in Debian's Chromium: the
// Magic Link of a PAC mandate shows "Autorizar con mi banco" and no account field; the button
// opens a page that loads Fintoc's widget script (from the stand-in, allowed by the page's
// policy) and opens the widget with the intent's token; the customer logs in at the "bank" and
// authorizes; back on our page, the bank is validating and the mandate waits PENDING
// (IN_VALIDATION); once the bank confirms, the sandbox's charging run activates it with the
// account and charges the installment due today on Fintoc, PAID when Fintoc says the charge
// succeeded. A wrong bank password is refused with its reason and the mandate stays PENDING.
// Screenshots go to target/ui-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, businessDate, merchantApi } from "./harness.mjs";
import { PUBLIC_KEY, SANDBOX_PASSWORD, SANDBOX_RUTS, SECRET, startFintoc } from "./fintoc-standin.mjs";

const COMMERCE = { code: "76123456-0", name: "Gimnasio Los Andes", password: "clave-secreta-1" };
const VALIDATING = "Su banco está validando la autorización del cargo automático";
const REFUSED = "No se autorizó el cargo automático: los datos de acceso a su banco no son correctos";

let server;
let fintoc;
let browser;
let page;
let call;

/** A PENDING mandate of a new customer that allows only PAC (5), one installment due `dueIn` days from today. */
async function bankMandate(id, user, rut, amount, dueIn) {
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
    paymentMethods: [5],
    installments: [{ id: "c1", amount, currencyId: "CLP", installmentDueDate: businessDate(dueIn) }],
  });
  return created.mandate;
}

/**
 * The customer's way from the Magic Link to the stand-in's bank login: the terms accepted,
 * "Autorizar con mi banco" clicked, our widget page loading Fintoc's script and opening the
 * widget. Answers our widget page's response (its policy is checked by the caller).
 */
async function openWidget(link) {
  await page.goto(link);
  const authorize = page.getByRole("button", { name: "Autorizar con mi banco" });
  await authorize.waitFor();
  assert.equal(await page.locator('input[name="accountNumber"]').count(), 0, "no account field on our page");
  // The sandbox banner tells whoever tries the page Fintoc's test logins.
  await page.getByText(`RUT ${SANDBOX_RUTS[0]}`, { exact: false }).first().waitFor();
  await page.locator("#fintoc-accept").check();
  const widgetPage = page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname.endsWith("/fintoc"));
  await authorize.click();
  const answered = await widgetPage;
  // The widget's script opened the stand-in's login page with the intent's token.
  await page.getByRole("heading", { name: "Fintoc (stand-in)" }).waitFor();
  const opened = new URL(page.url());
  assert.equal(opened.origin, fintoc.base);
  assert.equal(opened.pathname, "/widget/subscribe");
  assert.equal(opened.searchParams.get("public_key"), PUBLIC_KEY);
  assert.equal(opened.searchParams.get("product"), "subscriptions");
  assert.equal(opened.searchParams.get("holder_type"), "individual");
  assert.match(opened.searchParams.get("widget_token"), /^si_[A-Za-z0-9]+_sec_[A-Za-z0-9]+$/);
  // The widget returns to our return URL (the inline script put it in the address bar first).
  const back = new URL(opened.searchParams.get("return"));
  assert.equal(back.origin, new URL(link).origin);
  assert.match(back.pathname, /^\/link\/[^/]+\/fintoc\/return$/);
  assert.match(back.searchParams.get("intent"), /^si_[A-Za-z0-9]+$/);
  assert.ok(opened.searchParams.get("widget_token").startsWith(`${back.searchParams.get("intent")}_sec_`));
  // The widget shows the commerce as the recipient (`business_profile.name` of the intent).
  assert.equal(await page.locator("#merchant").textContent(), COMMERCE.name);
  return { answered, intent: back.searchParams.get("intent") };
}

/** Logs in at the stand-in's bank with the first sandbox RUT and `password`, and authorizes. */
async function logInAtTheBank(password) {
  await page.getByLabel("RUT").fill(SANDBOX_RUTS[0]);
  await page.getByLabel("Clave").fill(password);
  await page.getByRole("button", { name: "Autorizar" }).click();
}

describe("A bank account authorized on Fintoc", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    // The installment due today is charged by the sandbox's run, whatever day today is.
    server = await startServer({ businessDays: "every-day" });
    fintoc = await startFintoc();
    await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE.code, "--name", COMMERCE.name, "--password-stdin"], COMMERCE.password);
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create"]));
    call = await merchantApi(server.base, { commerce: COMMERCE.code, password: COMMERCE.password, apiKey: key.apiKey });
    await mandato(
      server.dataDir,
      ["--json", "acquirer", "set", "--commerce", COMMERCE.code, "--rail", "bank", "--kind", "fintoc",
        "--public-key", PUBLIC_KEY, "--base-url", fintoc.base, "--secret-stdin"],
      SECRET,
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
    await fintoc?.stop();
  });

  test("the customer authorizes at the bank in Fintoc's widget; the mandate activates once the bank validates it", async () => {
    const created = await bankMandate("PLAN-FINTOC", "cust-001", "12.345.678-5", 12000, 0);
    const { answered, intent } = await openWidget(created.magicLink);
    // Our widget page: 200, its policy allows the widget's origin and no other script but its
    // own hashed one.
    assert.equal(answered.status(), 200);
    const policy = (await answered.allHeaders())["content-security-policy"];
    assert.match(policy, new RegExp(`script-src 'sha256-[A-Za-z0-9+/=]+' ${fintoc.base.replace(/\./g, "\\.")};`), policy);
    assert.equal(fintoc.intent(intent).status, "in_progress");
    await page.screenshot({ path: join(SHOTS, "fintoc-widget-390.png"), fullPage: true });

    await logInAtTheBank(SANDBOX_PASSWORD);
    // Back on our page: the bank is validating the new subscription.
    await page.waitForURL((url) => url.searchParams.get("banco") === "validando");
    assert.equal(new URL(page.url()).origin, server.base);
    await page.getByText(VALIDATING).waitFor();
    // Nothing to do but wait: the bank's button is not offered again meanwhile.
    assert.equal(await page.getByRole("button", { name: "Autorizar con mi banco" }).count(), 0);
    await page.screenshot({ path: join(SHOTS, "fintoc-validating-390.png"), fullPage: true });
    const succeeded = fintoc.intent(intent);
    assert.equal(succeeded.status, "succeeded");
    assert.equal(succeeded.subscription.status, "pending");
    const waiting = await call("GET", "/mandate/id/PLAN-FINTOC");
    assert.equal(waiting.mandate.state.name, "PENDING");
    assert.equal(waiting.mandate.activationStatus, "IN_VALIDATION");
    // The engine asked Fintoc for the intent before believing the return.
    assert.ok(fintoc.requests.some((r) => r.method === "GET" && r.path === `/v1/subscription_intents/${intent}`));
    // The page still says so when opened again.
    await page.goto(created.magicLink);
    await page.getByText(VALIDATING).waitFor();

    // The bank confirms; the sandbox's run asks Fintoc, activates the mandate with the account
    // and charges today's installment on Fintoc.
    fintoc.activate(succeeded.subscription.id);
    const run = await call("POST", "/sandbox/charging/run");
    assert.equal(run.inValidation, 1, JSON.stringify(run));
    const active = await call("GET", "/mandate/id/PLAN-FINTOC");
    assert.equal(active.mandate.state.name, "ACTIVE", JSON.stringify(active));
    assert.equal(active.mandate.activationStatus ?? null, null);
    assert.equal(active.paymentMethod.id, 5);
    // The account's last four digits (the stand-in's account number is 95 and the RUT's first eight).
    assert.match(active.paymentMethod.instrument, /4850/, JSON.stringify(active.paymentMethod));
    assert.ok(fintoc.requests.some((r) => r.method === "GET" && r.path === `/v1/subscriptions/${succeeded.subscription.id}`));
    const [charge] = fintoc.charges();
    assert.equal(fintoc.charges().length, 1);
    assert.equal(charge.amount, 12000);
    assert.equal(charge.status, "pending");
    const sent = fintoc.requests.find((r) => r.method === "POST" && r.path === "/v1/charges");
    assert.equal(JSON.parse(sent.body).subscription_id, succeeded.subscription.id);
    assert.ok(sent.headers["idempotency-key"], "the attempt's key goes as Idempotency-Key");
    assert.equal(active.installments.find((i) => i.id === "c1").state.name, "IN_VALIDATION");

    // Fintoc collects the charge; the next business day's run asks Fintoc and the installment
    // is PAID (a run asks about the bank's answers to earlier days' charges).
    fintoc.settleCharge(charge.id, "succeeded");
    const clock = await call("POST", "/sandbox/clock", { advanceDays: 1 });
    assert.equal(clock.runs.length, 1, JSON.stringify(clock));
    assert.equal(clock.runs[0].settled, 1, JSON.stringify(clock.runs));
    assert.ok(fintoc.requests.some((r) => r.method === "GET" && r.path === `/v1/charges/${charge.id}`));
    const paid = (await call("GET", "/mandate/id/PLAN-FINTOC")).installments.find((i) => i.id === "c1");
    assert.equal(paid.state.name, "PAID", JSON.stringify(paid));
    assert.equal(paid.authorizationCode, charge.id);

    // The customer's page shows the mandate active with the account, and no bank step.
    await page.goto(created.magicLink);
    await page.getByRole("heading", { name: "Este mandato ya está activo" }).waitFor();
    await page.getByText("Banco Santander **** 4850").waitFor();
    assert.equal(await page.getByRole("button", { name: "Autorizar con mi banco" }).count(), 0);
    await page.screenshot({ path: join(SHOTS, "fintoc-active-390.png"), fullPage: true });
  });

  test("a wrong bank password is refused on our page, with the reason; the mandate stays pending", async () => {
    const created = await bankMandate("PLAN-FINTOC-WRONG", "cust-002", "11.111.111-1", 9900, 30);
    const { intent } = await openWidget(created.magicLink);
    await logInAtTheBank("wrong");
    // Back on our return URL, which asked Fintoc and shows why.
    await page.getByText(REFUSED).waitFor();
    assert.equal(new URL(page.url()).origin, server.base);
    assert.match(new URL(page.url()).pathname, /\/fintoc\/return$/);
    await page.screenshot({ path: join(SHOTS, "fintoc-refused-390.png"), fullPage: true });
    const failed = fintoc.intent(intent);
    assert.equal(failed.status, "failed");
    assert.equal(failed.public_error, "login_invalid_credentials");
    const found = await call("GET", "/mandate/id/PLAN-FINTOC-WRONG");
    assert.equal(found.mandate.state.name, "PENDING");
    assert.equal(found.mandate.activationStatus ?? null, null);
    // The step is offered again.
    await page.getByRole("button", { name: "Autorizar con mi banco" }).waitFor();
  });
});
