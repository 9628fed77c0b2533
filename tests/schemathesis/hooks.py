"""schemathesis hooks for mandato (scripts/schemathesis.sh loads them with SCHEMATHESIS_HOOKS).

Every request gets what a well-behaved client sends, so that what schemathesis varies is the
operation's own input: for /api/v1 the eight common headers with a fresh `correlationId` and
the current `requestDateTime`, and (through an auth provider, so that schemathesis' own
authentication probes can take them away) a valid `x-api-key` and a JWT from `POST /login`
(the password encrypted with the sandbox's `POST /jwe/encrypt`); for /admin/api a staff session
cookie and its CSRF token. The credentials come from the environment (set by the script that
made them): MANDATO_URL, MANDATO_COMMERCE, MANDATO_PASSWORD, MANDATO_API_KEY,
MANDATO_API_KEY_PREFIX, MANDATO_STAFF_EMAIL, MANDATO_STAFF_PASSWORD.

`/openapi.json` states every rule of a request that JSON Schema can state. What remains are
facts about the installation's data, which no schema of one request can know, and a few rules
across members. For schema-valid (positive) cases only, `before_call` makes those true and
leaves the rest of the generated request as it was, so that the run exercises the operations
for real instead of meeting 404s and business refusals:

- ids in paths and bodies name resources that exist (made through the API itself): the
  customer of a mandate, the mandate and installments an operation acts on, an event id;
- operations that move a state (cancel, pay or annul installments, activate, outcome) act on a
  resource made for that request, in the state the operation starts from, since the first
  successful call would otherwise leave the shared one where the next call must refuse it;
- ids the merchant chooses are unique in the commerce (a suffix), and a RUT gets its check
  digit (modulo 11, beyond a pattern);
- dates that must not be before the business date are moved onto or after it (the business
  date is the server's, which the sandbox clock moves);
- amounts keep the decimals of their currency (CLP 0, USD 2, CLF 4), and a payment's amount is
  the sum of the installments it pays;
- the JWE helper's `publicKey` is the environment's key (any other PEM text is not a key);
- a signature process gets a real PDF, its signatories are customers, each placed in every
  document, and a MANUAL box lies inside its page.

Negative cases are not repaired: they keep what makes them invalid, and get valid common
headers and credentials only where they are not what the case is about.

Where a check cannot apply as schemathesis writes it, `filter_failure` says why: a request
without `Authorization` is answered 403 (CONTRACT 3), not 401. schemathesis' authentication
probes bypass `before_call`; `_fresh_probe` gives them the fresh correlationId a client sends.
"""

import base64
import datetime
import decimal
import hashlib
import itertools
import os
import threading
import time
import uuid

import requests
import schemathesis
import schemathesis.specs.openapi.checks as _openapi_checks

URL = os.environ["MANDATO_URL"].rstrip("/")
API = f"{URL}/api/v1"
COMMERCE = os.environ["MANDATO_COMMERCE"]
PASSWORD = os.environ["MANDATO_PASSWORD"]
API_KEY = os.environ["MANDATO_API_KEY"]
API_KEY_PREFIX = os.environ["MANDATO_API_KEY_PREFIX"]
STAFF_EMAIL = os.environ["MANDATO_STAFF_EMAIL"]
STAFF_PASSWORD = os.environ["MANDATO_STAFF_PASSWORD"]

_lock = threading.RLock()
_jwt = None
_staff = None  # (session cookie, CSRF token)
_public_key = None
_serial = itertools.count(int(time.time()) % 100000 * 1000)
_fixtures = {}


def _common_headers():
    return {
        "country": "CL",
        "commerce": COMMERCE,
        "channel": "WEB",
        "requestDateTime": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="milliseconds"
        ),
        "correlationId": str(uuid.uuid4()),
        "processId": "API",
        "salesExecutiveId": "schemathesis",
    }


def _payload(reply, what):
    if reply.status_code >= 300:
        raise RuntimeError(f"{what}: HTTP {reply.status_code}: {reply.text[:500]}")
    return reply.json()["payload"]


def _jwe_public_key():
    global _public_key
    with _lock:
        if _public_key is None:
            _public_key = _payload(
                requests.get(f"{API}/.well-known/jwe-public-key", timeout=30), "public key"
            )["publicKey"]
        return _public_key


def _merchant_jwt():
    global _jwt
    with _lock:
        if _jwt is None:
            headers = {**_common_headers(), "x-api-key": API_KEY}
            token = _payload(
                requests.post(
                    f"{API}/jwe/encrypt",
                    json={"password": PASSWORD, "publicKey": _jwe_public_key()},
                    headers=headers,
                    timeout=30,
                ),
                "JWE encrypt",
            )["token"]
            _jwt = _payload(
                requests.post(
                    f"{API}/login",
                    json={"username": COMMERCE, "password": token},
                    headers={**_common_headers(), "x-api-key": API_KEY},
                    timeout=30,
                ),
                "login",
            )["token"]
        return _jwt


def _staff_session():
    global _staff
    with _lock:
        if _staff is None:
            reply = requests.post(
                f"{URL}/admin/api/session",
                json={"email": STAFF_EMAIL, "password": STAFF_PASSWORD},
                timeout=30,
            )
            csrf = _payload(reply, "staff sign-in")["csrfToken"]
            _staff = (reply.cookies["mandato_session"], csrf)
        return _staff


def _is_staff(case):
    servers = case.operation.definition.raw.get("servers") or []
    path_item = case.operation.schema.raw_schema["paths"].get(case.operation.path, {})
    servers = servers or path_item.get("servers") or []
    return any(s.get("url", "").startswith("/admin/api") for s in servers)


def _headers_negative(case):
    """Whether schemathesis made the headers invalid (or left one out) on purpose."""
    meta = case.meta
    if meta is None:
        return False
    return any(
        getattr(location, "value", location) == "header" and component.mode.is_negative
        for location, component in meta.components.items()
    )


def _header_under_test(case):
    """The one header a coverage case is about (left out or made invalid), if it names one."""
    data = getattr(getattr(case.meta, "phase", None), "data", None)
    location = getattr(data, "parameter_location", None)
    if getattr(location, "value", location) == "header":
        return getattr(data, "parameter", None)
    return None


def _fill_common_headers(case):
    """Valid common headers, but for what the case is about: one header a coverage case names
    stays as generated (or absent); a case whose headers were all generated invalid keeps them."""
    under_test = _header_under_test(case)
    # A method the operation does not declare is about the method: its headers are valid.
    undeclared = case.method.upper() != case.operation.method.upper()
    if undeclared:
        under_test = None
    elif under_test is None and _headers_negative(case):
        return
    headers = dict(case.headers or {})
    for name, value in {**_common_headers(), "x-api-key": API_KEY}.items():
        if name != under_test:
            headers[name] = value
    case.headers = headers


# Not cached by schemathesis: the staff session may end under test (DELETE /admin/api/session),
# and `after_call` then forgets it so that the next request signs in again.
@schemathesis.auth(refresh_interval=None)
class Credentials:
    """The run's own credentials: the API key and JWT of the merchant, or the staff session."""

    def get(self, case, ctx):
        if _is_staff(case):
            return ("staff", _staff_session())
        return ("merchant", _merchant_jwt())

    def set(self, case, data, ctx):
        kind, value = data
        headers = dict(case.headers or {})
        if kind == "staff":
            cookie, csrf = value
            case.cookies = {**(case.cookies or {}), "mandato_session": cookie}
            headers["x-csrf-token"] = csrf
        else:
            # A case whose headers are invalid on purpose keeps its own x-api-key (or none).
            under_test = _header_under_test(case)
            if under_test != "x-api-key" and (under_test or not _headers_negative(case)):
                headers["x-api-key"] = API_KEY
            if case.operation.definition.raw.get("security"):
                headers["Authorization"] = f"Bearer {value}"
        case.headers = headers


def _fresh_probe(send_probe):
    """schemathesis' authentication probes resend a case without its credentials, but not
    through `before_call`: they would repeat the case's correlationId, which the server refuses
    as a replay (CONTRACT 2) before it looks at credentials. A client sends a fresh one, and the
    current requestDateTime, with every request; so does each probe."""

    def send(ctx, parent, probe):
        if probe.headers and "correlationId" in probe.headers:
            fresh = _common_headers()
            probe.headers = {
                **probe.headers,
                "correlationId": fresh["correlationId"],
                "requestDateTime": fresh["requestDateTime"],
            }
        return send_probe(ctx, parent, probe)

    return send


_openapi_checks.send_probe = _fresh_probe(_openapi_checks.send_probe)


# ----- the API, as the hooks use it to make what a request acts on -----


def _call(method, path, body=None):
    headers = {
        **_common_headers(),
        "x-api-key": API_KEY,
        "Authorization": f"Bearer {_merchant_jwt()}",
    }
    reply = requests.request(method, f"{API}{path}", json=body, headers=headers, timeout=60)
    return _payload(reply, f"{method} {path}")


def _unique(base, width=64):
    suffix = f"-{next(_serial)}"
    return (base or "x")[: width - len(suffix)] + suffix


def _check_digit(body):
    total, factor = 0, 2
    for digit in reversed(str(body)):
        total += int(digit) * factor
        factor = 2 if factor == 7 else factor + 1
    rest = 11 - total % 11
    return {11: "0", 10: "K"}.get(rest, str(rest))


def _rut(body):
    body = int(body) % 100_000_000 or 1
    return f"{body}-{_check_digit(body)}"


def _fresh_rut():
    return _rut(10_000_000 + next(_serial) % 80_000_000)


def _today():
    return datetime.date.fromisoformat(_call("GET", "/sandbox/clock")["today"])


def _new_customer():
    user_id = _unique("st-cust")
    payload = _call(
        "POST",
        "/user",
        {
            "customer": {
                "userId": user_id,
                "identificationDocument": {"type": "RUT", "number": _fresh_rut()},
                "personalInformation": {"firstName": "Ana", "lastName": "Pérez"},
                "contacts": {"email": "ana@example.cl"},
            }
        },
    )
    return payload["customer"]


def _new_mandate(kind="DYNAMIC", installments=(), customer=None, urls=None):
    customer = customer or _customer()
    today = _today()
    charges = {"currencyId": "CLP"}
    if kind == "ONEPAY":
        charges.update(amount=1000, dueDate=(today + datetime.timedelta(days=1)).isoformat())
    body = {
        "customer": {"userId": customer["userId"]},
        "mandate": {"id": _unique("st-man"), "type": kind, "name": "Plan", "charges": charges},
        "installments": [
            {
                "id": _unique("st-ins"),
                "amount": amount,
                "installmentDueDate": (today + datetime.timedelta(days=1)).isoformat(),
                "currencyId": "CLP",
            }
            for amount in installments
        ],
    }
    if urls:
        body["urls"] = urls
    return _call("POST", "/mandate", body)


def _fixture(name, make):
    with _lock:
        if name not in _fixtures:
            _fixtures[name] = make()
        return _fixtures[name]


def _customer():
    return _fixture("customer", _new_customer)


def _dynamic():
    return _fixture("dynamic", lambda: _new_mandate("DYNAMIC", [1000]))


def _onepay():
    return _fixture("onepay", lambda: _new_mandate("ONEPAY"))


def _event_id():
    def make():
        # An event with a destination: one without is not delivered, nor redelivered.
        mandate = _new_mandate(
            "DYNAMIC",
            [1000],
            urls={"activationWebhook": "https://merchant.example/hooks/activation"},
        )
        internal_id = mandate["mandate"]["internalId"]
        _call(
            "POST",
            f"/sandbox/mandates/{internal_id}/activate",
            {
                "paymentMethodId": 3,
                "card": {"number": "4242424242424242", "expiry": "12/39", "cvv": "123"},
            },
        )
        cookie, csrf = _staff_session()
        reply = requests.get(
            f"{URL}/admin/api/events",
            params={"mandateInternalId": internal_id},
            cookies={"mandato_session": cookie},
            headers={"x-csrf-token": csrf},
            timeout=30,
        )
        return _payload(reply, "staff events")["items"][0]["eventId"]

    return _fixture("event", make)


# ----- repairs of positive cases -----

DECIMALS = {"CLP": 0, "USD": 2, "CLF": 4}


def _amount(value, currency):
    """The generated amount with its currency's decimals, still above 0."""
    places = DECIMALS.get(currency, 0)
    try:
        exact = decimal.Decimal(str(value))
    except (decimal.InvalidOperation, ValueError):
        exact = decimal.Decimal(1)
    step = decimal.Decimal(1).scaleb(-places)
    exact = exact.quantize(step, rounding=decimal.ROUND_DOWN)
    exact = max(exact, step)
    exact = min(exact, decimal.Decimal("99999999"))
    return int(exact) if places == 0 else float(exact)


def _date_from(value, today, days=3650):
    """A generated date moved to within `days` after the business date, keeping its variety."""
    try:
        given = datetime.date.fromisoformat(value)
    except (TypeError, ValueError):
        given = today
    if today <= given <= today + datetime.timedelta(days=days):
        return given.isoformat()
    offset = int(hashlib.sha256(str(value).encode()).hexdigest(), 16) % days
    return (today + datetime.timedelta(days=offset)).isoformat()


def _repair_user(case):
    customer = (case.body or {}).get("customer")
    if not isinstance(customer, dict):
        return
    customer["userId"] = _unique(customer.get("userId"))
    document = customer.get("identificationDocument")
    if isinstance(document, dict):
        document["number"] = _fresh_rut()


def _customer_ref(ref, customer):
    if isinstance(ref, dict) and "internalUserId" in ref:
        return {"internalUserId": customer["internalUserId"]}
    return {"userId": customer["userId"]}


def _repair_mandate(case):
    body = case.body if isinstance(case.body, dict) else None
    if body is None or not isinstance(body.get("mandate"), dict):
        return
    today = _today()
    customer = _customer()
    body["customer"] = _customer_ref(body.get("customer"), customer)
    mandate = body["mandate"]
    mandate["id"] = _unique(mandate.get("id"))
    kind = mandate.get("type")
    charges = mandate.get("charges") if isinstance(mandate.get("charges"), dict) else {}
    currency = charges.get("currencyId", "CLP")
    for field in ("amount", "maxAmount"):
        if field in charges:
            charges[field] = _amount(charges[field], currency)
    for field in ("startDate", "dueDate"):
        if field in charges:
            charges[field] = _date_from(charges[field], today)
    if "endDate" in charges and "startDate" in charges:
        # At most 1200 installments: a rule across periodicity, startDate and endDate.
        start = datetime.date.fromisoformat(charges["startDate"])
        end = datetime.date.fromisoformat(_date_from(charges["endDate"], start, 365))
        charges["endDate"] = end.isoformat()
    items = body.get("installments") or []
    for item in items:
        item["id"] = _unique(item.get("id"))
        item["currencyId"] = currency
        item["amount"] = _amount(item.get("amount", 1), currency)
        if "maxAmount" in charges:
            item["amount"] = min(item["amount"], charges["maxAmount"])
        item["installmentDueDate"] = _date_from(item.get("installmentDueDate"), today)
    # SUBSCRIPTION and PERMANENT mandates make their own installments; ONEPAY has one at most:
    # a rule across members of the body, left to the description.
    if kind in ("SUBSCRIPTION", "PERMANENT"):
        items = body["installments"] = [] if "installments" in body else items[:0]
    elif kind == "ONEPAY" and "installments" in body:
        items = body["installments"] = items[:1]
    if kind == "ONEPAY" and items:
        items[0]["amount"] = charges.get("amount", items[0]["amount"])
        charges.setdefault("dueDate", items[0]["installmentDueDate"])
        items[0]["installmentDueDate"] = charges["dueDate"]
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and len(repr(metadata)) > 8000:
        body["metadata"] = {}


def _repair_add_installments(case):
    body = case.body if isinstance(case.body, dict) else None
    if body is None:
        return
    mandate = _dynamic()
    today = _today()
    body["customer"] = _customer_ref(body.get("customer"), mandate["customer"])
    if isinstance(body.get("product"), dict) and "internalId" in body["product"]:
        body["product"] = {"internalId": mandate["mandate"]["internalId"]}
    else:
        body["product"] = {"id": mandate["mandate"]["id"]}
    items = body.get("installments") or []
    for item in items:
        item["id"] = _unique(item.get("id"))
        item["currencyId"] = "CLP"
        item["amount"] = _amount(item.get("amount", 1), "CLP")
        item["installmentDueDate"] = _date_from(item.get("installmentDueDate"), today)
    body["installmentsNumber"] = len(items)


def _repair_status_change(case):
    body = case.body if isinstance(case.body, dict) else None
    if body is None:
        return
    refs = body.get("installments") if isinstance(body.get("installments"), dict) else {}
    count = max(1, min(3, len(refs.get("ids") or refs.get("internalIds") or [1])))
    made = _new_mandate("DYNAMIC", [1000] * count)
    installments = made["installments"]
    if isinstance(body.get("product"), dict) and "internalId" in body["product"]:
        body["product"] = {"internalId": made["mandate"]["internalId"]}
    else:
        body["product"] = {"id": made["mandate"]["id"]}
    if "internalIds" in refs:
        body["installments"] = {"internalIds": [i["internalId"] for i in installments]}
    else:
        body["installments"] = {"ids": [i["id"] for i in installments]}
    if body.get("action") == "PAYMENT":
        payment = body.get("payment") if isinstance(body.get("payment"), dict) else {}
        today = _today()
        try:
            date = datetime.date.fromisoformat(payment.get("date"))
        except (TypeError, ValueError):
            date = today
        if not datetime.date(1900, 1, 1) <= date <= today:
            date = today
        payment.update(date=date.isoformat(), amount=1000 * count, currencyId="CLP")
        body["payment"] = payment


def _repair_cancel(case):
    made = _new_mandate("DYNAMIC", [1000])
    params = dict(case.path_parameters or {})
    params["mandateId"] = (
        made["mandate"]["internalId"]
        if params.get("mandateTypeId") == "internalId"
        else made["mandate"]["id"]
    )
    params["userId"] = (
        made["customer"]["internalUserId"]
        if params.get("userTypeId") == "internalUserId"
        else made["customer"]["userId"]
    )
    case.path_parameters = params
    # The reason is required, in the query or in the optional body: the document cannot say
    # "one of the two", so a request with neither gets one in the query.
    body = case.body if isinstance(case.body, dict) else {}
    query = dict(case.query or {})
    if not isinstance(body.get("description"), str) and not query.get("description"):
        query["description"] = "cliente se retira"
        case.query = query


def _repair_lookup(case):
    mandate = _dynamic()["mandate"]
    params = dict(case.path_parameters or {})
    params["mandateId"] = (
        mandate["internalId"] if params.get("mandateTypeId") == "internalId" else mandate["id"]
    )
    case.path_parameters = params


def _repair_onepay(case):
    case.path_parameters = {"mandateExternalId": _onepay()["mandate"]["id"]}


def _repair_activate(case):
    made = _new_mandate("DYNAMIC", [1000])
    case.path_parameters = {"internalId": made["mandate"]["internalId"]}
    body = case.body if isinstance(case.body, dict) else None
    if body is None:
        return
    if body.get("paymentMethodId") in (3, 4, 11):
        body.pop("bankAccount", None)
        body["card"] = {"number": "4242424242424242", "expiry": "12/39", "cvv": "123"}
    else:
        body.pop("card", None)
        body["bankAccount"] = {
            "bankCode": "012",
            "accountType": "CHECKING",
            "accountNumber": "123450000",
            "holderRut": _fresh_rut(),
        }


def _repair_outcome(case):
    body = case.body if isinstance(case.body, dict) else None
    made = _new_mandate("DYNAMIC", [1000])
    installment = made["installments"][0]
    if body is not None and body.get("result") == "REVERSED":
        # A reversal applies to a PAID installment: pay it by hand first.
        _call(
            "POST",
            "/installments/status/change",
            {
                "product": {"internalId": made["mandate"]["internalId"]},
                "installments": {"internalIds": [installment["internalId"]]},
                "action": "PAYMENT",
                "payment": {"date": _today().isoformat(), "amount": 1000, "currencyId": "CLP"},
            },
        )
    case.path_parameters = {"internalId": installment["internalId"]}


def _repair_clock(case):
    body = case.body if isinstance(case.body, dict) else None
    if body is not None and "advanceTo" in body:
        today = _today()
        body["advanceTo"] = _date_from(body["advanceTo"], today + datetime.timedelta(days=1), 30)


def _repair_event(case):
    case.path_parameters = {"eventId": _event_id()}


def _repair_encrypt(case):
    if isinstance(case.body, dict) and "publicKey" in case.body:
        case.body["publicKey"] = _jwe_public_key()


def _pdf():
    """A one-page PDF (US Letter), the smallest document the server parses and seals."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return base64.b64encode(bytes(out)).decode()


def _repair_signature(case):
    """A PDF is beyond a schema; signatories are customers of the commerce, each placed at
    least once in every document (rules across members); a MANUAL box lies inside its page."""
    body = case.body if isinstance(case.body, dict) else None
    if body is None or not isinstance(body.get("signatories"), list):
        return
    # An externalProcessId names one process of the commerce: a request repaired with new
    # customers is another request, so it gets an id of its own (an equal request would be a
    # replay, a different one with the same id a 400).
    process = body.get("process")
    if isinstance(process, dict) and isinstance(process.get("externalProcessId"), str):
        process["externalProcessId"] = "st-p-" + uuid.uuid4().hex[:16]
    refs = []
    for signatory in body["signatories"]:
        customer = _new_customer()
        if "internalUserId" in signatory and signatory.get("internalUserId") is not None:
            signatory["internalUserId"] = customer["internalUserId"]
            signatory.pop("userId", None)
            refs.append({"internalUserId": customer["internalUserId"]})
        else:
            signatory["userId"] = customer["userId"]
            signatory.pop("internalUserId", None)
            refs.append({"userId": customer["userId"]})
    pdf = _pdf()
    for document in body.get("documents") or []:
        document["contentBase64"] = pdf
        placements = [p for p in document.get("signatureData") or [] if isinstance(p, dict)]
        while len(placements) < len(refs):
            placements.append({"mode": "LAST_PAGE"})
        last_page = set()
        for i, placement in enumerate(placements):
            placement["signatory"] = refs[i % len(refs)]
            # One LAST_PAGE signature per signatory and document; more go in boxes.
            if placement.get("mode") != "MANUAL" and i % len(refs) in last_page:
                placement["mode"] = "MANUAL"
            if placement.get("mode") != "MANUAL":
                last_page.add(i % len(refs))
            if placement.get("mode") == "MANUAL":
                placement.update(page=1, x=72, y=72, width=180, height=50)
            else:
                for key in ("page", "x", "y", "width", "height"):
                    placement.pop(key, None)
        document["signatureData"] = placements


def _new_signature():
    customer = _new_customer()
    return _call(
        "POST",
        "/signature",
        {
            "process": {"processName": "Contrato"},
            "signatories": [{"userId": customer["userId"], "order": 1, "type": "FES"}],
            "documents": [
                {
                    "documentName": "contrato.pdf",
                    "contentBase64": _pdf(),
                    "signatureData": [
                        {"signatory": {"userId": customer["userId"]}, "mode": "LAST_PAGE"}
                    ],
                }
            ],
            "urls": {
                "callback": "https://merchant.example/done",
                "webhook": "https://merchant.example/hooks/signature",
            },
        },
    )["process"]["internalId"]


def _repair_signature_lookup(case):
    case.path_parameters = {"internalId": _fixture("signature", _new_signature)}


def _repair_signature_cancel(case):
    # Cancelling moves the process to CANCELLED: each request cancels one made for it.
    if isinstance(case.body, dict) and isinstance(case.body.get("process"), dict):
        case.body["process"]["internalId"] = _new_signature()


def _repair_receivables(case):
    # A cursor is opaque: only one the server made (a previous page's nextCursor) is valid.
    query = dict(case.query or {})
    query.pop("cursor", None)
    case.query = query


def _repair_events(case):
    # Its cursor is opaque too.
    _repair_receivables(case)


def _repair_period(case):
    # `from` after `to` is a period the server refuses (INVALID_PERIOD at query.to).
    query = dict(case.query or {})
    if isinstance(query.get("from"), str) and isinstance(query.get("to"), str):
        query["from"], query["to"] = sorted([query["from"], query["to"]])
    case.query = query


def _repair_ledger(case):
    _repair_period(case)
    # Its cursor is opaque too.
    _repair_receivables(case)
    # The listing answers JSON or, under `Accept: text/csv`, CSV: every other case asks for
    # CSV, so that both documented content types are checked.
    if next(_serial) % 2:
        case.headers = {**(case.headers or {}), "Accept": "text/csv"}


def _repair_reconciliation(case):
    # A payout report's cells (dates, exact amounts) are beyond a schema: a valid report.
    if isinstance(case.body, dict):
        case.body["csv"] = f"date,reference,amount\n{_today().isoformat()},AUT-SCHEMATHESIS,1000\n"


REPAIRS = {
    ("GET", "/ledger"): _repair_ledger,
    ("GET", "/ledger/settlements"): _repair_period,
    ("POST", "/ledger/reconciliations"): _repair_reconciliation,
    ("GET", "/events"): _repair_events,
    ("GET", "/events/{eventId}"): _repair_event,
    ("POST", "/events/{eventId}/redeliver"): _repair_event,
    ("POST", "/signature"): _repair_signature,
    ("GET", "/signature/internalId/{internalId}"): _repair_signature_lookup,
    ("DELETE", "/signature/cancel"): _repair_signature_cancel,
    ("GET", "/receivables"): _repair_receivables,
    ("POST", "/user"): _repair_user,
    ("POST", "/mandate"): _repair_mandate,
    ("GET", "/mandate/{mandateTypeId}/{mandateId}"): _repair_lookup,
    # An existing (DIRECT) mandate: its answer is the 404 of a document no signature sealed.
    ("GET", "/mandate/{mandateTypeId}/{mandateId}/document"): _repair_lookup,
    ("GET", "/mandate/onepay/confirm/id/{mandateExternalId}"): _repair_onepay,
    ("DELETE", "/mandate/cancel/{mandateTypeId}/{mandateId}/{userTypeId}/{userId}"): _repair_cancel,
    ("POST", "/installments"): _repair_add_installments,
    ("PUT", "/installments/status/change"): _repair_status_change,
    ("POST", "/installments/status/change"): _repair_status_change,
    ("POST", "/sandbox/mandates/{internalId}/activate"): _repair_activate,
    ("POST", "/sandbox/installments/{internalId}/outcome"): _repair_outcome,
    ("POST", "/sandbox/clock"): _repair_clock,
    ("GET", "/sandbox/notifications/{eventId}"): _repair_event,
    ("POST", "/sandbox/notifications/{eventId}/redeliver"): _repair_event,
    ("POST", "/jwe/encrypt"): _repair_encrypt,
}


def _is_positive(case):
    meta = case.meta
    return meta is not None and meta.generation.mode.is_positive


@schemathesis.hook
def before_call(context, case, **kwargs):
    # The run's own API key stays: revoking it (the stateful phase finds its prefix in the
    # list) would leave every later merchant request refused for a reason of the run's making.
    if case.method.upper() == "DELETE" and case.operation.path == "/api-keys/{prefix}":
        if (case.path_parameters or {}).get("prefix") == API_KEY_PREFIX:
            case.path_parameters = {**case.path_parameters, "prefix": "mk_absent"}
    # The run's own staff account stays usable: five wrong passwords for its e-mail (the
    # stateful phase finds the e-mail in GET /session) would lock it out for 15 minutes.
    if (
        _is_staff(case)
        and case.method.upper() == "POST"
        and case.operation.path in ("/session", "/setup")
        and isinstance(case.body, dict)
        and case.body.get("email") == STAFF_EMAIL
        and case.body.get("password") != STAFF_PASSWORD
    ):
        case.body = {**case.body, "email": "someone-else@mandato.example"}
    # Nor does a password change touch it: a wrong current password counts towards the same
    # lockout, and a right one would change the password the run signs in with. The same
    # password twice is refused (SAME_PASSWORD) before either can happen.
    if _is_staff(case) and case.method.upper() == "PUT" and case.operation.path == "/session/password":
        case.body = {"currentPassword": STAFF_PASSWORD, "newPassword": STAFF_PASSWORD}
    if _is_staff(case):
        return
    _fill_common_headers(case)
    repair = REPAIRS.get((case.method.upper(), case.operation.path))
    if repair is not None and _is_positive(case):
        repair(case)


@schemathesis.hook
def filter_failure(context, failure, case, response):
    # schemathesis expects 401 for a request without `Authorization`; CONTRACT 3 answers every
    # credential problem with 403 (`MISSING_TOKEN` here), as the seed's clients expect. Only
    # that answer to that header is let through: any other status still fails the run.
    if (
        getattr(failure, "code", None) == "ST203"
        and getattr(failure, "header_name", "").lower() == "authorization"
        and failure.status_code == 403
        and b'"MISSING_TOKEN"' in response.content
    ):
        return False
    # A schema-violating body that is also over its operation's documented body cap (a
    # `publicKey` past its 10000 characters can be) is refused with the documented 413
    # PAYLOAD_TOO_LARGE before it is read: refused all the same, though schemathesis' list of
    # rejecting statuses leaves 413 out.
    if (
        getattr(failure, "code", None) == "ST201"
        and response.status_code == 413
        and b'"PAYLOAD_TOO_LARGE"' in response.content
    ):
        return False
    return True


@schemathesis.hook
def after_call(context, case, response):
    # An operation under test may end the session (DELETE /admin/api/session): sign in again
    # for the next request rather than testing everything after it signed out.
    global _staff
    if _is_staff(case) and response.status_code == 401:
        with _lock:
            _staff = None
    # A sandbox reset removed the commerce's customers, mandates and events: what the repairs
    # made before is gone, so the next repair makes it again rather than naming what is not.
    if case.operation.path == "/sandbox/reset" and response.status_code == 200:
        with _lock:
            _fixtures.clear()
