// A Transbank Oneclick Mall stand-in for the browser tests: the REST API the engine calls and
// Webpay's inscription page the customer types the card on, on a loopback port. The same
// sources as the Rust stand-in of `tests/api/transbank.rs` (Transbank's Python SDK at 195398a:
// `mall_inscription.py`, `mall_transaction.py`, `headers_builder.py` and the fixtures of
// `tests/mocks/responses_api_mocks.py`; the return parameters of transbankdevelopers.cl's
// Oneclick guide, "Resumen de flujos"): inscriptions start with a token and Webpay's URL, the
// page sends the browser back to `response_url` with `TBK_TOKEN` (and `TBK_ORDEN_COMPRA`,
// `TBK_ID_SESION` when cancelled), finishing answers `inscription_finish_response` (-96 for
// one never completed), authorizations answer `authorize_response`.
import { createServer } from "node:http";

const ONECLICK = "/rswebpaytransaction/api/oneclick/v1.2";
const WEBPAY_PAGE = "/webpayserver/bp_multicode_inscription.cgi";
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

/** Starts the stand-in; answers `{ base, stop, authorizations }`. */
export async function startTransbank() {
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
    if (request.headers["tbk-api-key-id"] !== MALL || request.headers["tbk-api-key-secret"] !== KEY) {
      return json(response, 401, { error_message: "Not Authorized" });
    }
    const input = text ? JSON.parse(text) : {};
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
  return { base, authorizations, stop: () => new Promise((ok) => server.close(ok)) };
}
