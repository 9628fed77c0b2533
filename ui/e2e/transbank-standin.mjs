// A Transbank Oneclick Mall stand-in for the browser tests: the REST API the engine calls and
// Webpay's inscription page the customer types the card on, on a loopback port. The same
// sources as the Rust stand-in of `tests/api/transbank.rs` (Transbank's Python SDK at 195398a:
// `mall_inscription.py`, `mall_transaction.py`, `headers_builder.py` and the fixtures of
// `tests/mocks/responses_api_mocks.py`; the return parameters of transbankdevelopers.cl's
// Oneclick guide, "Resumen de flujos"): inscriptions start with a token and Webpay's URL, the
// page sends the browser back to `response_url` with `TBK_TOKEN` (and `TBK_ORDEN_COMPRA`,
// `TBK_ID_SESION` when cancelled), finishing answers `inscription_finish_response` (-96 for
// one never completed), authorizations answer `authorize_response`. Webpay Plus (portal
// payments, `webpay_plus/transaction.py`): `create` answers `create_response` (`{token, url}`),
// the payment page sends the browser back to `return_url` with `token_ws` (or `TBK_TOKEN`,
// `TBK_ORDEN_COMPRA` and `TBK_ID_SESION` when cancelled), commit and status answer
// `commit_status_response`, a commit before the customer paid `commit_error` (422).
import { createServer } from "node:http";

const ONECLICK = "/rswebpaytransaction/api/oneclick/v1.2";
const WEBPAY_PAGE = "/webpayserver/bp_multicode_inscription.cgi";
const WEBPAY_PLUS = "/rswebpaytransaction/api/webpay/v1.2";
const WEBPAY_PLUS_PAGE = "/webpayserver/initTransaction";
export const MALL = "597055555541";
export const CHILD = "597055555542";
export const WEBPAY = "597055555532";
export const KEY = "579B532A7440BB0C9079DED94D31EA1615BACEB56610332264630D42D0A36B1C";
/** Transbank's integration test cards (transbankdevelopers.cl/documentacion/como_empezar). */
const CARDS = { "4051885600446623": "Visa", "4051884239937763": "Redcompra", "4051886000056590": "Prepago" };

function body(request) {
  return new Promise((ok) => {
    let text = "";
    request.on("data", (d) => (text += d));
    request.on("end", () => ok(text));
  });
}

function json(response, status, value) {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(value === undefined ? "" : JSON.stringify(value));
}

const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** `commit_status_response`'s shape for a Webpay Plus transaction. */
function paymentAnswer(p) {
  return {
    vci: "TSY",
    amount: p.amount,
    status: p.status,
    buy_order: p.buyOrder,
    session_id: p.sessionId,
    card_detail: { card_number: "6623" },
    accounting_date: "0624",
    transaction_date: "2020-06-24T12:26:21.463Z",
    authorization_code: p.responseCode === 0 ? "1213" : "000000",
    payment_type_code: p.paymentType,
    response_code: p.responseCode,
    installments_number: 0,
  };
}

/** Webpay Plus's payment page and its submission (`card` or `cancel`). */
function webpayPlusPage(payments, form, response) {
  const token = form.get("token_ws") ?? "";
  const payment = payments.get(token);
  if (!payment) return json(response, 400, { error_message: "token desconocido" });
  if (form.has("cancel") || form.has("card")) {
    let to = `${payment.returnUrl}?token_ws=${token}`;
    if (form.has("cancel")) {
      to = `${payment.returnUrl}?TBK_TOKEN=${token}&TBK_ORDEN_COMPRA=${payment.buyOrder}&TBK_ID_SESION=${payment.sessionId}`;
    } else {
      const card = form.get("card").replace(/\s/g, "");
      const kind = { Visa: "VN", Redcompra: "VD", Prepago: "VP" }[CARDS[card]];
      payment.status = kind ? "AUTHORIZED" : "FAILED";
      payment.responseCode = kind ? 0 : -1;
      payment.paymentType = kind ?? "VN";
    }
    response.writeHead(303, { location: to });
    return response.end();
  }
  response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
  return response.end(`<!doctype html><html lang="es"><head><title>Webpay</title></head><body>
<h1>Webpay Plus (stand-in)</h1><p>Monto: $${payment.amount}</p>
<form method="post" action="${WEBPAY_PLUS_PAGE}"><input type="hidden" name="token_ws" value="${escape(token)}">
<label for="card">Número de tarjeta</label><input id="card" name="card"><button type="submit">Pagar</button></form>
<form method="post" action="${WEBPAY_PLUS_PAGE}"><input type="hidden" name="token_ws" value="${escape(token)}">
<input type="hidden" name="cancel" value="1"><button type="submit">Anular compra</button></form></body></html>`);
}

/** Webpay Plus's REST API: create, commit, status. */
function webpayPlusApi(payments, request, url, input, response, fresh, base) {
  if (request.method === "POST" && url.pathname === `${WEBPAY_PLUS}/transactions`) {
    if (!(input.amount > 0)) return json(response, 422, { error_message: "Invalid value for parameter: amount" });
    const token = fresh();
    payments.set(token, {
      buyOrder: input.buy_order,
      sessionId: input.session_id,
      amount: input.amount,
      returnUrl: input.return_url,
      status: "INITIALIZED",
      responseCode: null,
      paymentType: null,
      commits: 0,
    });
    return json(response, 200, { token, url: `${base}${WEBPAY_PLUS_PAGE}` });
  }
  const one = url.pathname.match(new RegExp(`^${WEBPAY_PLUS}/transactions/([^/]+)$`));
  const payment = one && payments.get(one[1]);
  if (!payment) return json(response, 422, { error_message: "Invalid value for parameter: token" });
  if (request.method === "GET") return json(response, 200, paymentAnswer(payment));
  if (request.method === "PUT") {
    if (payment.status === "INITIALIZED") {
      return json(response, 422, {
        error_message: "Invalid status 0 for transaction while authorizing. Commerce will be notified by webpay to authorize",
      });
    }
    if (payment.commits > 0) return json(response, 422, { error_message: "Transaction already committed" });
    payment.commits += 1;
    return json(response, 200, paymentAnswer(payment));
  }
  return json(response, 404, { error_message: "not found" });
}

/** Starts the stand-in; answers `{ base, stop, authorizations, payments }`. */
export async function startTransbank() {
  const payments = new Map();
  const inscriptions = new Map();
  const users = new Map();
  const authorizations = new Map();
  let next = 0;
  let base = "";
  const server = createServer(async (request, response) => {
    const url = new URL(request.url, base);
    const text = await body(request);
    if (url.pathname === WEBPAY_PAGE) {
      const form = new URLSearchParams(request.method === "GET" ? url.search : text);
      const token = form.get("TBK_TOKEN") ?? "";
      const inscription = inscriptions.get(token);
      if (!inscription) return json(response, 400, { error_message: "token desconocido" });
      if (form.has("cancel") || form.has("card")) {
        let to = `${inscription.responseUrl}?TBK_TOKEN=${token}`;
        if (form.has("cancel")) to += "&TBK_ORDEN_COMPRA=&TBK_ID_SESION=";
        else inscription.card = form.get("card").replace(/\s/g, "");
        response.writeHead(303, { location: to });
        return response.end();
      }
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      return response.end(`<!doctype html><html lang="es"><head><title>Webpay</title></head><body>
<h1>Webpay (stand-in)</h1>
<form method="post" action="${WEBPAY_PAGE}"><input type="hidden" name="TBK_TOKEN" value="${escape(token)}">
<label for="card">Número de tarjeta</label><input id="card" name="card"><button type="submit">Inscribir</button></form>
<form method="post" action="${WEBPAY_PAGE}"><input type="hidden" name="TBK_TOKEN" value="${escape(token)}">
<input type="hidden" name="cancel" value="1"><button type="submit">Anular</button></form></body></html>`);
    }
    if (url.pathname === WEBPAY_PLUS_PAGE) {
      return webpayPlusPage(payments, new URLSearchParams(text), response);
    }
    const product = url.pathname.startsWith(WEBPAY_PLUS) ? WEBPAY : MALL;
    if (request.headers["tbk-api-key-id"] !== product || request.headers["tbk-api-key-secret"] !== KEY) {
      return json(response, 401, { error_message: "Not Authorized" });
    }
    const input = text ? JSON.parse(text) : {};
    if (product === WEBPAY) {
      return webpayPlusApi(payments, request, url, input, response, () => `01ab${String(++next).padStart(60, "0")}`, base);
    }
    if (request.method === "POST" && url.pathname === `${ONECLICK}/inscriptions`) {
      const token = `01ab${String(++next).padStart(60, "0")}`;
      inscriptions.set(token, { username: input.username, responseUrl: input.response_url, card: null, finished: false });
      return json(response, 200, { token, url_webpay: `${base}${WEBPAY_PAGE}` });
    }
    const finish = url.pathname.match(new RegExp(`^${ONECLICK}/inscriptions/([^/]+)$`));
    if (request.method === "PUT" && finish) {
      const inscription = inscriptions.get(finish[1]);
      if (!inscription) return json(response, 404, { error_message: "Invalid value for parameter: token" });
      if (!inscription.card || inscription.finished) return json(response, 200, { response_code: -96 });
      inscription.finished = true;
      const cardType = CARDS[inscription.card];
      if (!cardType) return json(response, 200, { response_code: -1 });
      const tbkUser = `08ed03b1-${String(++next).padStart(12, "0")}`;
      users.set(tbkUser, inscription.username);
      return json(response, 200, {
        response_code: 0,
        tbk_user: tbkUser,
        authorization_code: "1213",
        card_type: cardType,
        card_number: `XXXXXXXXXXXX${inscription.card.slice(-4)}`,
      });
    }
    if (request.method === "POST" && url.pathname === `${ONECLICK}/transactions`) {
      if (users.get(input.tbk_user) !== input.username) return json(response, 500, { description: "Internal server error" });
      if (authorizations.has(input.buy_order)) return json(response, 422, { error_message: "Invalid value for parameter: buy_order" });
      const detail = input.details[0];
      const answer = {
        details: [{ ...detail, status: "AUTHORIZED", authorization_code: "1213", payment_type_code: "VN", response_code: 0, installments_number: 0 }],
        buy_order: input.buy_order,
        card_detail: { card_number: "6623" },
        accounting_date: "1019",
        transaction_date: "2023-10-19T21:30:21.095Z",
      };
      authorizations.set(input.buy_order, answer);
      return json(response, 200, answer);
    }
    const status = url.pathname.match(new RegExp(`^${ONECLICK}/transactions/([^/]+)$`));
    if (request.method === "GET" && status) {
      const answer = authorizations.get(status[1]);
      return answer ? json(response, 200, answer) : json(response, 422, { error_message: "Invalid value for parameter: buy order not found" });
    }
    return json(response, 404, { error_message: "not found" });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  base = `http://127.0.0.1:${server.address().port}`;
  return { base, authorizations, payments, stop: () => new Promise((ok) => server.close(ok)) };
}
