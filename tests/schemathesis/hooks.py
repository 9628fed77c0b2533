"""schemathesis hooks for mandato (scripts/schemathesis.sh loads them with SCHEMATHESIS_HOOKS).

Every request gets what a well-behaved client sends, so that what schemathesis varies is the
operation's own input: for /api/v1 the eight common headers with a fresh `correlationId` and
the current `requestDateTime`, a valid `x-api-key`, and a JWT from `POST /login` (the password
encrypted with the sandbox's `POST /jwe/encrypt`); for /admin/api a staff session cookie and its
CSRF token. The credentials come from the environment (set by the script that made them):
MANDATO_URL, MANDATO_COMMERCE, MANDATO_PASSWORD, MANDATO_API_KEY, MANDATO_API_KEY_PREFIX,
MANDATO_STAFF_EMAIL, MANDATO_STAFF_PASSWORD.
"""

import datetime
import os
import threading
import uuid

import requests
import schemathesis

URL = os.environ["MANDATO_URL"].rstrip("/")
COMMERCE = os.environ["MANDATO_COMMERCE"]
PASSWORD = os.environ["MANDATO_PASSWORD"]
API_KEY = os.environ["MANDATO_API_KEY"]
API_KEY_PREFIX = os.environ["MANDATO_API_KEY_PREFIX"]
STAFF_EMAIL = os.environ["MANDATO_STAFF_EMAIL"]
STAFF_PASSWORD = os.environ["MANDATO_STAFF_PASSWORD"]

_lock = threading.Lock()
_jwt = None
_staff = None  # (session cookie, CSRF token)


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
        "x-api-key": API_KEY,
    }


def _payload(reply, what):
    if reply.status_code >= 300:
        raise RuntimeError(f"{what}: HTTP {reply.status_code}: {reply.text[:500]}")
    return reply.json()["payload"]


def _merchant_jwt():
    global _jwt
    with _lock:
        if _jwt is None:
            public_key = _payload(
                requests.get(f"{URL}/api/v1/.well-known/jwe-public-key", timeout=30),
                "public key",
            )["publicKey"]
            token = _payload(
                requests.post(
                    f"{URL}/api/v1/jwe/encrypt",
                    json={"password": PASSWORD, "publicKey": public_key},
                    headers=_common_headers(),
                    timeout=30,
                ),
                "JWE encrypt",
            )["token"]
            _jwt = _payload(
                requests.post(
                    f"{URL}/api/v1/login",
                    json={"username": COMMERCE, "password": token},
                    headers=_common_headers(),
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


@schemathesis.hook
def before_call(context, case, **kwargs):
    # The run's own API key stays: revoking it (the stateful phase finds its prefix in the
    # list) would leave every later merchant request refused for a reason of the run's making.
    if case.method.upper() == "DELETE" and case.operation.path == "/api-keys/{prefix}":
        if (case.path_parameters or {}).get("prefix") == API_KEY_PREFIX:
            case.path_parameters = {**case.path_parameters, "prefix": "mk_absent"}
    headers = dict(case.headers or {})
    if _is_staff(case):
        cookie, csrf = _staff_session()
        cookies = dict(case.cookies or {})
        cookies["mandato_session"] = cookie
        case.cookies = cookies
        headers["x-csrf-token"] = csrf
    else:
        headers.update(_common_headers())
        if case.operation.definition.raw.get("security"):
            headers["Authorization"] = f"Bearer {_merchant_jwt()}"
    case.headers = headers


@schemathesis.hook
def after_call(context, case, response):
    # An operation under test may end the session (DELETE /admin/api/session): sign in again
    # for the next request rather than testing everything after it signed out.
    global _staff
    if _is_staff(case) and response.status_code == 401:
        with _lock:
            _staff = None
