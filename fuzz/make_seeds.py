#!/usr/bin/env python3
"""Writes the committed seed corpora of the fuzz targets into fuzz/corpus/seeds/TARGET/.

Run: python3 fuzz/make_seeds.py. The output is deterministic; the JWE seeds are the
interop vectors of tests/fixtures/jwe/vectors.json (made for the key the jwe_compact target
loads), so they reach the decrypter itself.
"""

import base64
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent / "corpus" / "seeds"
ROOT = pathlib.Path(__file__).resolve().parent.parent


def pdf(pages):
    """A small valid PDF: `pages` is a list of page dictionaries' extra entries; the page tree
    carries an inherited MediaBox and resources, so inheritance is exercised too."""
    objects = []  # object bodies, numbered from 1

    def add(body):
        objects.append(body)
        return len(objects)

    catalog = add(None)
    tree = add(None)
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for i, extra in enumerate(pages):
        text = f"BT /F1 12 Tf 40 40 Td (Pagina {i + 1}) Tj ET".encode()
        content = add(b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream")
        kids.append(add(f"<< /Type /Page /Parent {tree} 0 R /Contents {content} 0 R {extra}>>".encode()))
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {tree} 0 R >>".encode()
    refs = " ".join(f"{k} 0 R" for k in kids)
    objects[tree - 1] = (
        f"<< /Type /Pages /Kids [{refs}] /Count {len(kids)} /MediaBox [0 0 595 842] "
        f"/Resources << /Font << /F1 {font} 0 R >> >> >>"
    ).encode()
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        catalog,
        xref,
    )
    return bytes(out)


ONE_PAGE = pdf([""])
PAGES = pdf(["", "/MediaBox [0 0 612 792] /Rotate 90 ", "/CropBox [50 100 450 600] "])

SEEDS = {
    "rut": {
        "plain": "12345678-5",
        "dots": "12.345.678-5",
        "no-dash": "123456785",
        "k-lower": "1000005-k",
        "leading-zeros": "012.345.678-5",
        "one-digit": "1-9",
        "spaces": "  7654321-6\n",
        "wrong-check": "12345678-9",
        "misplaced-dot": "1234.5678-5",
        "non-ascii": "1234567\u00e9",
    },
    "mandate_body": {
        "subscription": {
            "customer": {"userId": "cust-001"},
            "mandate": {
                "id": "M-001",
                "type": "SUBSCRIPTION",
                "name": "Plan mensual",
                "detail": "Gimnasio",
                "charges": {
                    "currencyId": "CLP",
                    "amount": 29990,
                    "periodicity": "MONTHLY",
                    "startDate": "2026-07-01",
                    "count": 3,
                },
            },
            "paymentMethods": [3, 4, 5],
            "metadata": {"plan": "gold"},
            "urls": {
                "callback": "https://merchant.example/return",
                "activationWebhook": "https://merchant.example/hooks/activation",
                "paymentWebhook": "https://merchant.example/hooks/payment",
            },
        },
        "dynamic": {
            "customer": {"internalUserId": "usr_0190"},
            "mandate": {
                "id": "M-002",
                "type": "DYNAMIC",
                "name": "Consumo",
                "charges": {"currencyId": "UF", "maxAmount": 12.5},
            },
            "installments": [
                {"id": "1", "amount": 1.25, "installmentDueDate": "2026-07-10", "currencyId": "UF"},
                {"id": "2", "amount": 3, "installmentDueDate": "2026-08-10", "currencyId": "UF"},
            ],
        },
        "onepay": {
            "customer": {"userId": "cust-002"},
            "mandate": {
                "id": "M-003",
                "type": "ONEPAY",
                "name": "Matricula",
                "charges": {"currencyId": "CLP", "amount": 150000, "dueDate": "2026-06-20"},
                "terminateWhenCharged": True,
            },
        },
        "permanent-end": {
            "customer": {"userId": "cust-003"},
            "mandate": {
                "id": "M-004",
                "type": "PERMANENT",
                "name": "Seguro",
                "charges": {
                    "currencyId": "CLP",
                    "amount": 9990,
                    "periodicity": "WEEKLY",
                    "startDate": "9999-12-01",
                    "endDate": "9999-12-31",
                },
            },
        },
    },
    "signature_body": {
        "last-page": {
            "process": {
                "processName": "Contrato de arriendo",
                "externalProcessId": "P-001",
                "requestUser": "ops@merchant.example",
                "expirationDays": 30,
            },
            "signatories": [
                {"userId": "cust-a", "order": 1, "type": "FES"},
                {"internalUserId": "usr_b", "order": 2, "type": "FEA"},
            ],
            "documents": [
                {
                    "documentName": "contrato.pdf",
                    "contentBase64": base64.b64encode(ONE_PAGE).decode(),
                    "signatureData": [
                        {"signatory": {"userId": "cust-a"}, "mode": "LAST_PAGE"},
                        {"signatory": {"internalUserId": "usr_b"}, "mode": "LAST_PAGE"},
                    ],
                }
            ],
            "urls": {
                "callback": "https://merchant.example/firmas/listo",
                "webhook": "https://merchant.example/hooks/signature",
            },
        },
        "manual": {
            "process": {"processName": "Anexo"},
            "signatories": [{"userId": "cust-c", "order": 1, "type": "FAO"}],
            "documents": [
                {
                    "documentName": "anexo.pdf",
                    "contentBase64": base64.b64encode(PAGES).decode(),
                    "signatureData": [
                        {
                            "signatory": {"userId": "cust-c"},
                            "mode": "MANUAL",
                            "page": 2,
                            "x": 10,
                            "y": 10,
                            "width": 100,
                            "height": 40,
                        }
                    ],
                }
            ],
            "urls": {
                "callback": "https://merchant.example/firmas/listo",
                "webhook": "https://merchant.example/hooks/signature",
            },
        },
        "unknown-signatory": {
            "process": {"processName": "x"},
            "signatories": [{"userId": "missing-1", "order": 1, "type": "FES"}],
            "documents": [
                {
                    "documentName": "d.pdf",
                    "contentBase64": base64.b64encode(ONE_PAGE).decode(),
                    "signatureData": [{"signatory": {"userId": "missing-1"}, "mode": "LAST_PAGE"}],
                }
            ],
            "urls": {"callback": "https://merchant.example/a", "webhook": "https://merchant.example/b"},
        },
    },
    "pdf_intake": {"one-page.pdf": ONE_PAGE, "three-pages.pdf": PAGES},
}


def main():
    vectors = json.loads((ROOT / "tests/fixtures/jwe/vectors.json").read_text())
    SEEDS["jwe_compact"] = {f"vector-{i}": v["token"] for i, v in enumerate(vectors)}
    SEEDS["jwe_compact"]["plain-password"] = "clave-secreta-1"
    for target, seeds in SEEDS.items():
        folder = HERE / target
        folder.mkdir(parents=True, exist_ok=True)
        for name, value in seeds.items():
            if isinstance(value, (dict, list)):
                value = json.dumps(value, ensure_ascii=False)
            if isinstance(value, str):
                value = value.encode()
            (folder / name).write_bytes(value)


if __name__ == "__main__":
    main()
