// A Fintoc Direct Debit stand-in for the browser tests: the part of Fintoc's API the bank rail
// calls and a stand-in of its subscription widget, on a loopback port. It mirrors the Rust
// stand-in of `tests/api/fintoc.rs` (its module doc names the docs.fintoc.com pages and SDK
// commits each shape comes from) and keeps its wire shapes, keys and sandbox logins; only what
// the Magic Link's bank step and the charging run use is ported:
// - `POST /v1/subscription_intents` (201, the intent with its `widget_token`
//   `si_<id>_sec_<secret>`, valid 10 minutes), `GET /v1/subscription_intents/{id}` (the token
//   then null, the subscription object embedded once there is one), `GET /v1/subscriptions/{id}`,
//   `POST /v1/charges` (201, `pending`; only an `active` subscription can be charged) and
//   `GET /v1/charges/{id}`; every `/v1` call needs `Authorization: <secret key>` (no `Bearer`),
//   errors are `{"error": {code, doc_url, message, param, type}}`, a POST's `Idempotency-Key`
//   replays the first answer (a different body under the same key is refused).
// - The widget: `GET /widget/v1/` stands for `https://js.fintoc.com/v1/` and defines
//   `window.Fintoc.create(options)`, whose `open()` takes the whole page to
//   `GET /widget/subscribe` (the bank's login and the authorization, in one form) instead of
//   opening Fintoc's iframe; its form POSTs to `/widget/subscribe`, which answers 303 back to
//   the page that opened it (`return`). A documented sandbox RUT with `jonsnow` succeeds the
//   intent with a `pending` subscription (the bank still validates it), other credentials fail
//   it with `login_invalid_credentials`, "Rechazar" rejects it. The return carries nothing: the
//   merchant learns the outcome by retrieving the intent.
// The bank's validation of a subscription and the collection of a charge happen only when the
// test says so (`activate`, `settleCharge`).
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";

/** The made-up test-mode keys of `tests/api/fintoc.rs`. */
export const SECRET = "sk_test_Mnd4t0St4nd1nS3cr3tK3y9c8dQ";
export const PUBLIC_KEY = "pk_test_Mnd4t0St4nd1nPubl1cK3yX2bR7";
/** The sandbox's documented usernames (RUTs) for a subscription in Chile, and their password. */
export const SANDBOX_RUTS = ["41614850-3", "40427672-7", "41579263-8"];
export const SANDBOX_PASSWORD = "jonsnow";

/** "The token is temporary and will expire 10 minutes after its creation." */
const WIDGET_TOKEN_TTL_MS = 600_000;
/** The account holder of every sandbox subscription (the object example's `holder_name`). */
const HOLDER_NAME = "Jon Snow";
const ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** `len` random letters and digits, the alphabet of Fintoc's ids (`si_m7N9rAWJS9dWDKEe`). */
function random(len) {
  return [...randomBytes(len)].map((b) => ALPHANUMERIC[b % ALPHANUMERIC.length]).join("");
}

/** The objects' timestamps (`"created_at": "2021-11-11T02:29:16Z"`). */
const stamp = (at) => at.toISOString().replace(/\.\d{3}Z$/, "Z");

/** A RUT as typed (`41.614.850-3`, `41614850-3`, `416148503`) → `416148503`. */
const normalizeRut = (rut) => String(rut).replace(/[.\- ]/g, "").toUpperCase();

const escape = (s) =>
  String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

function error(status, type, code, message, param = null) {
  return [status, { error: { code, doc_url: `https://fintoc.com/docs#${type.replace(/_/g, "-")}`, message, param, type } }];
}
const invalid = (code, message, param = null) => error(400, "invalid_request_error", code, message, param);
const missing = (what, id) => error(404, "invalid_request_error", "missing_resource", `No such ${what}: ${id}`, "id");

function reply(response, [status, body]) {
  response.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  response.end(JSON.stringify(body));
}

function readBody(request) {
  return new Promise((ok) => {
    let text = "";
    request.setEncoding("utf8");
    request.on("data", (d) => (text += d));
    request.on("end", () => ok(text));
  });
}

/** The body as a JSON object; no body at all is an empty one. */
function objectBody(text) {
  if (!text.trim()) return {};
  try {
    const value = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value)) return value;
  } catch {
    // Not JSON: refused below.
  }
  throw invalid("invalid_json", "The request body must be a JSON object");
}

/** Unknown parameters are refused, so a misspelt field is not silently dropped. */
function onlyKnown(body, known) {
  const unknown = Object.keys(body).find((k) => !known.includes(k));
  if (unknown) throw invalid("invalid_params", `Unknown parameter: ${unknown}`, unknown);
}

/** `null` or an object of strings with the allowed keys (`business_profile`). */
function profile(body, allowed) {
  const value = body.business_profile;
  if (value === undefined || value === null) return null;
  const ok =
    typeof value === "object" &&
    !Array.isArray(value) &&
    Object.entries(value).every(([k, v]) => allowed.includes(k) && typeof v === "string");
  if (!ok) throw invalid("invalid_hash", "business_profile must be an object of strings", "business_profile");
  return value;
}

/** `metadata`: up to 50 keys of up to 40 characters, string (≤ 500), boolean or number values. */
function metadata(body) {
  const value = body.metadata;
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) throw invalid("invalid_hash", "metadata must be an object", "metadata");
  const entries = Object.entries(value);
  const fits =
    entries.length <= 50 &&
    entries.every(
      ([k, v]) =>
        [...k].length <= 40 &&
        ((typeof v === "string" && [...v].length <= 500) || typeof v === "boolean" || typeof v === "number"),
    );
  if (!fits) {
    throw invalid(
      "invalid_params",
      "metadata takes up to 50 keys of up to 40 characters, with string (up to 500 characters), boolean or number values",
      "metadata",
    );
  }
  return value;
}

/** `reference/direct-debit-subscription-object`; every sandbox account is Banco Santander's. */
function subscriptionJson(s) {
  return {
    id: s.id,
    object: "subscription",
    account: {
      id: s.accountId,
      object: "account",
      balance: null,
      currency: "CLP",
      holder_id: s.holderId,
      holder_name: HOLDER_NAME,
      institution: { id: "cl_banco_santander", country: "cl", name: "Banco Santander" },
      name: "Cuenta Corriente",
      number: s.number,
      official_name: "Cuenta Corriente Moneda Local",
      type: "checking_account",
    },
    created_at: stamp(s.createdAt),
    mode: "test",
    reference_id: s.referenceId,
    status: s.status,
  };
}

/** `reference-link/charge-object` (no `subscription_id`: the client keeps the link itself). */
function chargeJson(c) {
  return {
    id: c.id,
    object: "charge",
    status: c.status,
    amount: c.amount,
    currency: "CLP",
    failure_code: c.failureCode,
    metadata: c.metadata,
    mode: "test",
    created_at: stamp(c.createdAt),
    business_profile: c.businessProfile,
  };
}

/** The widget stand-in's script, as `tests/api/fintoc.rs` serves it. */
const WIDGET_SCRIPT = `// Fintoc widget stand-in (mandato's tests/api/fintoc.rs), for https://js.fintoc.com/v1/.
(function () {
  "use strict";
  var BASE = __BASE__;
  function create(options) {
    options = options || {};
    return {
      open: function () {
        if (typeof options.onEvent === "function") {
          options.onEvent("opened", {});
        }
        var query = new URLSearchParams({
          widget_token: options.widgetToken || "",
          public_key: options.publicKey || "",
          product: options.product || "",
          holder_type: options.holderType || "",
          "return": window.location.href
        });
        window.location.assign(BASE + "/widget/subscribe?" + query.toString());
      },
      close: function () {},
      hide: function () {},
      destroy: function () {}
    };
  }
  window.Fintoc = { create: create };
})();
`;

function html(response, status, text) {
  response.writeHead(status, { "content-type": "text/html; charset=utf-8" });
  response.end(text);
}

/** The widget's page for a problem (a bad configuration, a used or expired token). */
function widgetProblem(response, status, message) {
  html(
    response,
    status,
    `<!doctype html><html lang="es"><head><title>Fintoc</title></head><body><h1>Fintoc (stand-in)</h1><p class="error">${escape(message)}</p></body></html>`,
  );
}

/**
 * Starts the stand-in; answers `{ base, stop, requests, intent, charges, activate,
 * settleCharge }`. `requests` holds every `/v1` call as `{ method, path,
 * headers, body }`.
 */
export async function startFintoc() {
  const intents = [];
  const subscriptions = [];
  const charges = [];
  /** Idempotency key → `{ fingerprint, answer }`. */
  const idempotency = new Map();
  const requests = [];
  let base = "";

  const intentJson = (intent, withToken) => {
    const subscription = intent.subscription && subscriptions.find((s) => s.id === intent.subscription);
    return {
      id: intent.id,
      object: "subscription_intent",
      business_profile: intent.businessProfile,
      created_at: stamp(intent.createdAt),
      customer_email: intent.customerEmail,
      mode: "test",
      public_error: intent.publicError,
      reference_id: intent.referenceId,
      status: intent.status,
      subscription: subscription ? subscriptionJson(subscription) : null,
      // "only returned when creating the Subscription Intent. After that, it will always be null."
      widget_token: withToken ? intent.widgetToken : null,
    };
  };

  function createIntent(text) {
    const body = objectBody(text);
    onlyKnown(body, ["business_profile", "customer_email", "reference_id"]);
    const businessProfile = profile(body, ["name"]);
    let customerEmail = null;
    if (body.customer_email !== undefined && body.customer_email !== null) {
      if (typeof body.customer_email !== "string" || !body.customer_email.includes("@")) {
        throw invalid("invalid_params", "customer_email must be an email address", "customer_email");
      }
      customerEmail = body.customer_email;
    }
    let referenceId = null;
    if (body.reference_id !== undefined && body.reference_id !== null) {
      const reference = body.reference_id;
      if (typeof reference !== "string") throw invalid("invalid_string", "reference_id must be a string", "reference_id");
      if (reference.length === 0 || reference.length > 15) {
        throw invalid("invalid_reference_id_size", "reference_id must have between 1 and 15 characters", "reference_id");
      }
      if (!/^[A-Z0-9]+$/.test(reference)) {
        throw invalid("invalid_params", "reference_id takes uppercase letters and numbers only", "reference_id");
      }
      if (intents.some((i) => i.status !== "failed" && i.referenceId === reference)) {
        throw invalid("invalid_params", "reference_id is already in use", "reference_id");
      }
      referenceId = reference;
    }
    const id = `si_${random(16)}`;
    const intent = {
      id,
      widgetToken: `${id}_sec_${random(24)}`,
      issued: Date.now(),
      businessProfile,
      customerEmail,
      referenceId,
      status: "created",
      publicError: null,
      subscription: null,
      createdAt: new Date(),
    };
    intents.push(intent);
    // A creation answers 201, so a client that expects exactly 200 fails here.
    return [201, intentJson(intent, true)];
  }

  function createCharge(text) {
    const body = objectBody(text);
    onlyKnown(body, ["amount", "currency", "subscription_id", "metadata", "business_profile", "recipient_account"]);
    for (const name of ["subscription_id", "amount", "currency"]) {
      if (body[name] === undefined || body[name] === null) throw invalid("missing_parameter", `Missing required param: ${name}`, name);
    }
    // "A positive integer": 5000.0, "5000" and 0 are refused (JSON.parse reads 5000.0 as an
    // integer, so the number as written is looked at too).
    const written = text.match(/"amount"\s*:\s*(-?[0-9][0-9.eE+-]*)/)?.[1] ?? "";
    if (!Number.isInteger(body.amount) || body.amount <= 0 || !/^[0-9]+$/.test(written)) {
      throw invalid("invalid_amount", "amount must be a positive integer", "amount");
    }
    if (body.currency !== "CLP") throw invalid("invalid_currency", "CLP is the only supported currency", "currency");
    if (typeof body.subscription_id !== "string") throw invalid("invalid_string", "subscription_id must be a string", "subscription_id");
    const meta = metadata(body);
    const businessProfile = profile(body, ["name", "tax_id", "category"]);
    const subscription = subscriptions.find((s) => s.id === body.subscription_id);
    if (!subscription) throw invalid("missing_resource", `No such subscription: ${body.subscription_id}`, "subscription_id");
    if (subscription.status !== "active") {
      throw invalid(
        "subscription_inactive",
        `Subscription ${subscription.id} is ${subscription.status}; only active subscriptions can be charged`,
        "subscription_id",
      );
    }
    const charge = {
      id: `ch_${random(16)}`,
      subscriptionId: subscription.id,
      amount: body.amount,
      status: "pending",
      failureCode: null,
      metadata: meta,
      businessProfile,
      createdAt: new Date(),
    };
    charges.push(charge);
    return [201, chargeJson(charge)];
  }

  /** Runs `work` under Fintoc's idempotency rules: the first answer (errors included) is saved. */
  function idempotent(key, fingerprint, work) {
    const run = () => {
      try {
        return work();
      } catch (answer) {
        if (Array.isArray(answer)) return answer;
        throw answer;
      }
    };
    if (key === undefined) return run();
    if (key.length === 0 || [...key].length > 255) {
      return invalid("invalid_string_size", "Idempotency keys can contain up to 255 characters", "Idempotency-Key");
    }
    const saved = idempotency.get(key);
    if (saved && saved.fingerprint !== fingerprint) {
      return invalid(
        "invalid_params",
        "Keys for idempotent requests can only be used with the same parameters they were first used with",
        "Idempotency-Key",
      );
    }
    if (saved) return saved.answer;
    const answer = run();
    idempotency.set(key, { fingerprint, answer });
    return answer;
  }

  /** What the idempotency layer compares: the endpoint and the parsed parameters. */
  function fingerprintOf(path, text) {
    let params;
    try {
      params = JSON.parse(text || "null");
    } catch {
      params = text;
    }
    const sorted = (v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]))
        : Array.isArray(v) ? v.map(sorted) : v;
    return JSON.stringify({ path, params: sorted(params) });
  }

  function api(request, url, text) {
    const path = url.pathname;
    if (request.method === "POST" && path === "/v1/subscription_intents") {
      return idempotent(request.headers["idempotency-key"], fingerprintOf(path, text), () => createIntent(text));
    }
    if (request.method === "POST" && path === "/v1/charges") {
      return idempotent(request.headers["idempotency-key"], fingerprintOf(path, text), () => createCharge(text));
    }
    let m;
    if (request.method === "GET" && (m = path.match(/^\/v1\/subscription_intents\/([^/]+)$/))) {
      const id = decodeURIComponent(m[1]);
      const intent = intents.find((i) => i.id === id);
      return intent ? [200, intentJson(intent, false)] : missing("subscription_intent", id);
    }
    if (request.method === "GET" && (m = path.match(/^\/v1\/subscriptions\/([^/]+)$/))) {
      const id = decodeURIComponent(m[1]);
      const subscription = subscriptions.find((s) => s.id === id);
      return subscription ? [200, subscriptionJson(subscription)] : missing("subscription", id);
    }
    if (request.method === "GET" && (m = path.match(/^\/v1\/charges\/([^/]+)$/))) {
      const id = decodeURIComponent(m[1]);
      const charge = charges.find((c) => c.id === id);
      return charge ? [200, chargeJson(charge)] : missing("charge", id);
    }
    return error(404, "invalid_request_error", "invalid_url", `Unrecognized request URL: ${path}`);
  }

  /**
   * The intent of a widget token, if the widget can still work on it: not yet decided, and
   * the token at most 10 minutes old (an expired one fails its intent). Throws the refusal.
   */
  function usable(token) {
    const intent = intents.find((i) => i.widgetToken === token);
    if (!intent) throw "El widget_token no es válido (invalid_widget_token).";
    if (!["created", "in_progress"].includes(intent.status)) throw "Esta suscripción ya fue procesada.";
    if (Date.now() - intent.issued > WIDGET_TOKEN_TTL_MS) {
      intent.status = "failed";
      intent.publicError = "subscription_intent_expired";
      throw "El widget_token expiró.";
    }
    return intent;
  }

  /** `GET /widget/subscribe`: the bank login and the authorization, checked as the docs state. */
  function subscribePage(url, response) {
    const param = (name) => url.searchParams.get(name) ?? "";
    if (param("public_key") !== PUBLIC_KEY) return widgetProblem(response, 401, "La clave pública (publicKey) no es válida.");
    if (param("product") !== "subscriptions") return widgetProblem(response, 400, "El producto debe ser 'subscriptions'.");
    if (!["individual", "business"].includes(param("holder_type"))) {
      return widgetProblem(response, 400, "holderType debe ser 'individual' o 'business'.");
    }
    let intent;
    try {
      intent = usable(param("widget_token"));
    } catch (message) {
      return widgetProblem(response, 400, message);
    }
    // Opening the widget moves the intent to `in_progress`.
    intent.status = "in_progress";
    const merchant = intent.businessProfile?.name ?? "Comercio";
    return html(
      response,
      200,
      `<!doctype html><html lang="es"><head><title>Fintoc</title></head><body>
<h1>Fintoc (stand-in)</h1>
<p>Empresa receptora: <strong id="merchant">${escape(merchant)}</strong></p>
<form method="post" action="/widget/subscribe">
<input type="hidden" name="widget_token" value="${escape(param("widget_token"))}">
<input type="hidden" name="return" value="${escape(param("return"))}">
<label for="username">RUT</label>
<input id="username" name="username" autocomplete="username">
<label for="password">Clave</label>
<input id="password" name="password" type="password" autocomplete="current-password">
<button type="submit" name="action" value="authorize">Autorizar</button>
<button type="submit" name="action" value="reject" formnovalidate>Rechazar</button></form></body></html>`,
    );
  }

  /** `POST /widget/subscribe`: authorize (sandbox RUT and `jonsnow`), fail, or reject; then back. */
  function subscribeSubmit(text, response) {
    const form = new URLSearchParams(text);
    const field = (name) => form.get(name) ?? "";
    let intent;
    try {
      intent = usable(field("widget_token"));
    } catch (message) {
      return widgetProblem(response, 400, message);
    }
    const rut = normalizeRut(field("username"));
    const sandbox = SANDBOX_RUTS.some((r) => normalizeRut(r) === rut);
    if (field("action") === "reject") {
      intent.status = "rejected";
    } else if (sandbox && field("password") === SANDBOX_PASSWORD) {
      const subscription = {
        id: `sub_${random(16)}`,
        accountId: `acc_${random(16)}`,
        // "If not provided, it defaults to the holder_id."
        referenceId: intent.referenceId ?? rut,
        holderId: rut,
        // The Rust stand-in's default account number: `95` and the RUT's first eight digits.
        number: `95${rut.slice(0, 8)}`,
        status: "pending",
        createdAt: new Date(),
      };
      subscriptions.push(subscription);
      intent.status = "succeeded";
      intent.subscription = subscription.id;
    } else {
      intent.status = "failed";
      intent.publicError = "login_invalid_credentials";
    }
    let back = null;
    try {
      back = new URL(field("return"));
    } catch {
      // No page to go back to: the closing page below.
    }
    if (back && ["http:", "https:"].includes(back.protocol)) {
      response.writeHead(303, { location: back.href });
      return response.end();
    }
    return html(
      response,
      200,
      `<!doctype html><html lang="es"><head><title>Fintoc</title></head><body><h1>Fintoc (stand-in)</h1><p>Listo. Puedes cerrar esta ventana.</p></body></html>`,
    );
  }

  const server = createServer(async (request, response) => {
    const url = new URL(request.url, base);
    const text = await readBody(request);
    if (request.method === "GET" && (url.pathname === "/widget/v1/" || url.pathname === "/widget/v1")) {
      response.writeHead(200, { "content-type": "application/javascript; charset=utf-8" });
      return response.end(WIDGET_SCRIPT.replace("__BASE__", JSON.stringify(base)));
    }
    if (url.pathname === "/widget/subscribe") {
      if (request.method === "GET") return subscribePage(url, response);
      if (request.method === "POST") return subscribeSubmit(text, response);
    }
    if (url.pathname.startsWith("/v1/") || url.pathname === "/v1") {
      requests.push({ method: request.method, path: url.pathname + url.search, headers: request.headers, body: text });
      // Exactly the secret key: `Bearer <key>` is refused (the docs and SDKs send the raw key).
      if (request.headers.authorization !== SECRET) {
        return reply(response, error(401, "authentication_error", "invalid_api_key", "Invalid API Key provided"));
      }
      return reply(response, api(request, url, text));
    }
    // Outside the API and the widget: a bare 404, as the Rust stand-in's router answers.
    response.writeHead(404);
    return response.end();
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  base = `http://127.0.0.1:${server.address().port}`;

  const subscriptionById = (id) => {
    const subscription = subscriptions.find((s) => s.id === id);
    if (!subscription) throw new Error(`no subscription ${id}`);
    return subscription;
  };
  return {
    base,
    requests,
    /** The intent as `GET /v1/subscription_intents/{id}` answers it. */
    intent: (id) => {
      const intent = intents.find((i) => i.id === id);
      return intent ? intentJson(intent, false) : null;
    },
    /** Every charge, as the API answers them, in creation order. */
    charges: () => charges.map(chargeJson),
    /** The bank confirmed the subscription (`subscription.activated`): `pending` → `active`. */
    activate(id) {
      const subscription = subscriptionById(id);
      if (subscription.status !== "pending") throw new Error(`subscription ${id} is ${subscription.status}, not pending`);
      subscription.status = "active";
      return subscriptionJson(subscription);
    },
    /**
     * The bank's collection decided a `pending` or `in_progress` charge: `succeeded`,
     * `in_progress`, `canceled`, or `failed` with `failureCode` (`insufficient_funds`, ...).
     */
    settleCharge(id, status, failureCode = null) {
      const charge = charges.find((c) => c.id === id);
      if (!charge) throw new Error(`no charge ${id}`);
      if (!["pending", "in_progress"].includes(charge.status)) throw new Error(`charge ${id} is already ${charge.status}`);
      charge.status = status;
      // "Always null unless status is failed."
      charge.failureCode = status === "failed" ? failureCode ?? "other" : null;
      return chargeJson(charge);
    },
    stop: () => new Promise((ok) => server.close(ok)),
  };
}
