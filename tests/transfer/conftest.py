"""Fixtures of the data-transfer tests: uploading a CSV through the API, running the job functions directly."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

HEADER = "Patient ID,Forename,Surname,Email,Mobile,DOB,Postcode\n"


def csv_bytes(rows: list[str], header: str = HEADER, bom: bool = False) -> bytes:
    text = header + "".join(row + "\n" for row in rows)
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode()


def upload(client, content: bytes, *, name: str = "patients.csv", **fields):
    return client.post("/transfer/core-imports", {"file": SimpleUploadedFile(name, content), **fields})


MAPPING = {
    "externalId": "Patient ID",
    "firstName": "Forename",
    "lastName": "Surname",
    "email": "Email",
    "phoneMobile": "Mobile",
    "dateOfBirth": "DOB",
    "postalCode": "Postcode",
}


def mapped(client, content: bytes, mapping=None, **fields) -> dict:
    response = upload(client, content, **fields)
    assert response.status_code == 201, response.content
    import_id = response.json()["id"]
    response = client.put(
        f"/transfer/core-imports/{import_id}", {"mapping": mapping or MAPPING}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return response.json()


def good_rows(count: int, *, start: int = 1, name: str = "Anna") -> list[str]:
    return [
        f"P{n},{name}{n},Rossi,anna{n}@example.com,+44 7700 900{n:03d},1980-02-{1 + n % 28:02d},SW1A 1AA"
        for n in range(start, start + count)
    ]


@pytest.fixture
def clock(time_machine):
    time_machine.move_to(timezone.now().replace(microsecond=0), tick=False)
    return time_machine


@pytest.fixture
def manager(owner, member_factory):
    return member_factory(role="manager", organization=owner.organization)


@pytest.fixture
def commit(django_capture_on_commit_callbacks):
    """A block whose on-commit work (queued tasks) runs when it ends, as after a real commit."""
    return lambda: django_capture_on_commit_callbacks(execute=True)
