"""Fixtures of the referrals tests: a programme, an advocate with tokens (all through HTTP), and `committed`."""

import pytest

from tests.factories import PatientFactory


def post_json(client, path, data=None, **extra):
    return client.post(path, {} if data is None else data, content_type="application/json", **extra)


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """committed(fn, *args, **kwargs): call fn, then run the on-commit callbacks (Celery is eager in tests)."""

    def run(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return run


def make_programme(client, **fields) -> dict:
    body = {
        "name": "Refer a friend",
        "rewardDescription": "£50 off your next visit",
        "rewardAmount": "50.00",
        "rewardCurrency": "gbp",
        "pageTitle": "Smile together",
        "consentText": "Send me offers.",
    } | fields
    response = post_json(client, "/referral-programmes", body)
    assert response.status_code == 201, response.content
    return response.json()


def make_advocate(client, organization, programme: dict, **patient_fields) -> dict:
    patient = PatientFactory(organization=organization, first_name="Alice", last_name="Advocate", **patient_fields)
    response = post_json(client, f"/patients/{patient.id}/referral-token", {"programmeId": programme["id"]})
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def programme(api) -> dict:
    return make_programme(api)


@pytest.fixture
def advocate(api, owner, programme) -> dict:
    return make_advocate(api, owner.organization, programme)
