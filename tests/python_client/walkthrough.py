"""The README walkthrough, driven with the Python client that openapi-python-client generates
from /openapi.json (scripts/python-client.sh generates it and runs this against a fresh
`mandato serve`): log in with the JWE-encrypted password, register a customer, create a
subscription, look it up, activate it through the sandbox, let the charging run and read the
installments. Every call goes through the generated functions and models, so a document that
types a field wrongly, or leaves out a status, breaks this script.

Environment: MANDATO_URL, MANDATO_COMMERCE, MANDATO_PASSWORD, MANDATO_API_KEY.
"""

import datetime
import os
import sys
import uuid

from mandato_client import AuthenticatedClient, Client
from mandato_client.api.authentication import encrypt, jwe_public_key, login
from mandato_client.api.customers import create_user
from mandato_client.api.installments import receivables
from mandato_client.api.mandates import create_mandate, find_mandate
from mandato_client.api.sandbox import activate, advance_clock, get_clock, run_charging
from mandato_client.models import (
    ActivateRequest,
    ActivateRequestPaymentMethodId,
    AdvanceRequestType0,
    CardIn,
    ChargesIn,
    ChargesInCurrencyId,
    ChargesInPeriodicityType0,
    ContactsIn,
    Country,
    CustomerIn,
    CustomerRefInType0,
    EncryptRequest,
    FindMandateMandateTypeId,
    IdentificationDocumentIn,
    LoginRequest,
    MandateIn,
    MandateInType,
    MandateRequest,
    PersonalInformationIn,
    ProcessId,
    UrlsIn,
    UserRequest,
)

URL = os.environ["MANDATO_URL"].rstrip("/") + "/api/v1"
COMMERCE = os.environ["MANDATO_COMMERCE"]
PASSWORD = os.environ["MANDATO_PASSWORD"]
API_KEY = os.environ["MANDATO_API_KEY"]


def headers():
    """The eight common headers, with a fresh correlationId and the current time."""
    return {
        "country": Country.CL,
        "commerce": COMMERCE,
        "channel": "WEB",
        "request_date_time": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="milliseconds"
        ),
        "correlation_id": str(uuid.uuid4()),
        "process_id": ProcessId.HYBRID,
        "sales_executive_id": "SE-01",
        "x_api_key": API_KEY,
    }


def ok(response, status, name):
    """The parsed envelope of an answer that must be `status` with the success `name`."""
    if response.status_code != status or response.parsed is None:
        sys.exit(f"expected {status} {name}, got {response.status_code}: {response.content[:600]!r}")
    if response.parsed.name != name:
        sys.exit(f"expected {name}, got {response.parsed.name}")
    return response.parsed.payload


def step(text):
    print(f"-- {text}", flush=True)


def main():
    public = Client(base_url=URL, raise_on_unexpected_status=True)

    step("1. encrypt the password with the environment's public key, then log in")
    key = jwe_public_key.sync_detailed(client=public)
    public_key = ok(key, 200, "JWE_PUBLIC_KEY_OK").public_key
    token = ok(
        encrypt.sync_detailed(
            client=public,
            body=EncryptRequest(password=PASSWORD, public_key=public_key),
            **headers(),
        ),
        200,
        "JWE_ENCRYPT_OK",
    ).token
    session = ok(
        login.sync_detailed(
            client=public, body=LoginRequest(username=COMMERCE, password=token), **headers()
        ),
        200,
        "LOGIN_OK",
    )
    assert session.token_type == "Bearer", session.token_type
    client = AuthenticatedClient(base_url=URL, token=session.token, raise_on_unexpected_status=True)

    step("2. register a customer")
    customer = ok(
        create_user.sync_detailed(
            client=client,
            body=UserRequest(
                customer=CustomerIn(
                    user_id="cust-001",
                    identification_document=IdentificationDocumentIn(number="12.345.678-5"),
                    personal_information=PersonalInformationIn(first_name="Ana", last_name="Pérez"),
                    contacts=ContactsIn(email="ana@example.cl"),
                )
            ),
            **headers(),
        ),
        201,
        "USER_CREATE_OK",
    ).customer
    assert customer.identification_document.number == "12345678-5", customer
    assert customer.internal_user_id.startswith("usr_"), customer

    step("3. create a monthly subscription of 12 installments starting in a week")
    clock = ok(get_clock.sync_detailed(client=client, **headers()), 200, "SANDBOX_CLOCK_OK")
    start = datetime.date.fromisoformat(str(clock.today)) + datetime.timedelta(days=7)
    created = ok(
        create_mandate.sync_detailed(
            client=client,
            body=MandateRequest(
                customer=CustomerRefInType0(user_id="cust-001"),
                mandate=MandateIn(
                    id="GYM-2026-001",
                    type_=MandateInType.SUBSCRIPTION,
                    name="Plan mensual",
                    charges=ChargesIn(
                        currency_id=ChargesInCurrencyId.CLP,
                        amount=29990,
                        periodicity=ChargesInPeriodicityType0.MONTHLY,
                        start_date=start,
                        count=12,
                    ),
                ),
                urls=UrlsIn(
                    payment_webhook="https://merchant.example/hooks/payment",
                    activation_webhook="https://merchant.example/hooks/activation",
                ),
            ),
            **headers(),
        ),
        201,
        "MANDATE_CREATE_OK",
    )
    mandate = created.mandate
    assert mandate.state.name == "PENDING", mandate.state
    assert len(created.installments) == 12, len(created.installments)
    assert mandate.magic_link.startswith("http"), mandate.magic_link

    step("4. look it up by the merchant's id")
    found = ok(
        find_mandate.sync_detailed(
            FindMandateMandateTypeId.ID, "GYM-2026-001", client=client, **headers()
        ),
        200,
        "MANDATE_DETAIL_OK",
    )
    assert found.mandate.internal_id == mandate.internal_id, found.mandate
    assert found.payment_method is None, found.payment_method

    step("5. activate it through the sandbox with a test card")
    active = ok(
        activate.sync_detailed(
            mandate.internal_id,
            client=client,
            body=ActivateRequest(
                payment_method_id=ActivateRequestPaymentMethodId.VALUE_3,
                card=CardIn(number="4242424242424242", expiry="12/39", cvv="123"),
            ),
            **headers(),
        ),
        200,
        "SANDBOX_ACTIVATE_OK",
    )
    assert active.mandate.state.name == "ACTIVE", active.mandate.state

    step("6. move the business clock to the first due date: the charging runs")
    moved = ok(
        advance_clock.sync_detailed(
            client=client, body=AdvanceRequestType0(advance_to=start), **headers()
        ),
        200,
        "SANDBOX_CLOCK_OK",
    )
    assert str(moved.today) == start.isoformat(), moved.today
    run = ok(run_charging.sync_detailed(client=client, **headers()), 200, "SANDBOX_CHARGING_RUN_OK")
    assert str(run.date) == start.isoformat(), run.date

    step("7. read the installments")
    page = ok(
        receivables.sync_detailed(
            client=client, mandate_external_id="GYM-2026-001", limit=100, **headers()
        ),
        200,
        "RECEIVABLES_OK",
    )
    states = [item.installment.state.name for item in page.items]
    assert len(states) == 12, states
    assert states[0] == "PAID", states
    assert all(s == "PENDING" for s in states[1:]), states
    assert page.items[0].installment.authorization_code, page.items[0].installment
    print(f"walkthrough: mandate {mandate.internal_id} active, first installment PAID")


if __name__ == "__main__":
    main()
