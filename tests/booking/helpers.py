"""Shared helpers of the booking tests."""

from datetime import UTC, datetime, timedelta

from django.test import Client

JSON = "application/json"
PAGES = "/settings/booking-pages"
NOW = datetime(2031, 3, 3, 8, 0, tzinfo=UTC)  # Monday, 09:00 in Rome
TUESDAY = "2031-03-04"
# Tuesday 09:00 in Rome (UTC+1 in March) is 08:00 UTC; hours run to 12:00 local = 11:00 UTC.
FIRST_SLOT = datetime(2031, 3, 4, 8, 0, tzinfo=UTC)


def slot(n: int) -> datetime:
    """The n-th 30-minute slot of Tuesday (0..5)."""
    return FIRST_SLOT + timedelta(minutes=30 * n)


def wire(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def post_json(client: Client, path: str, data=None):
    return client.post(path, {} if data is None else data, content_type=JSON)


def create_page(client: Client, body: dict) -> dict:
    response = post_json(client, PAGES, body)
    assert response.status_code == 201, response.content
    return response.json()


def public() -> Client:
    return Client()


def config(token: str, client: Client | None = None):
    return (client or public()).get(f"/booking/{token}/config")


def availability(token: str, start: str = TUESDAY, end: str = TUESDAY, client: Client | None = None, **extra):
    return (client or public()).get(f"/booking/{token}/availability", {"start": start, "end": end, **extra})


def hold(token: str, practitioner_id: str, starts_at: datetime, client: Client | None = None, **extra):
    body = {"practitionerId": practitioner_id, "startsAt": wire(starts_at), **extra}
    return post_json(client or public(), f"/booking/{token}/holds", body)


PATIENT = {"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com", "phone": "+39 333 123 4567"}


def complete(token: str, hold_id: str, body: dict | None = None, client: Client | None = None):
    return post_json(client or public(), f"/booking/{token}/holds/{hold_id}/complete", body or PATIENT)


def held(token: str, practitioner_id: str, starts_at: datetime) -> dict:
    response = hold(token, practitioner_id, starts_at)
    assert response.status_code == 201, response.content
    return response.json()


def booked(token: str, practitioner_id: str, starts_at: datetime, body: dict | None = None) -> dict:
    hold_id = held(token, practitioner_id, starts_at)["holdId"]
    response = complete(token, hold_id, body)
    assert response.status_code == 201, response.content
    return response.json()


def manage(uid: str, action: str = "") -> str:
    return f"/booking/manage/{uid}" + (f"/{action}" if action else "")
