"""Shared helpers of the deposits tests."""

import json
from urllib.parse import urlsplit

from django.test import Client
from django.utils import timezone

from apps.deposits.models import DepositRequest, PaymentAccount
from apps.events.models import Event
from apps.journeys.public import journey_create
from tests.factories import PatientFactory

DEPOSITS = "/deposits"


def post_json(client: Client, path: str, data=None, **extra):
    return client.post(path, json.dumps({} if data is None else data), content_type="application/json", **extra)


def patch_json(client: Client, path: str, data):
    return client.patch(path, json.dumps(data), content_type="application/json")


def url(deposit, action: str = "") -> str:
    deposit_id = deposit["id"] if isinstance(deposit, dict) else deposit.id if hasattr(deposit, "id") else deposit
    return f"{DEPOSITS}/{deposit_id}" + (f"/{action}" if action else "")


def make_patient(organization, **fields):
    return PatientFactory(organization=organization, **fields)


def make_journey(organization, user, patient):
    return journey_create(organization=organization, user=user, data={"patient": patient})


def create_deposit(client: Client, patient, **fields) -> dict:
    body = {"patientId": str(patient.id), "amount": 5000, "currency": "GBP", "reason": "Implant consultation"}
    body.update(fields)
    response = post_json(client, DEPOSITS, body)
    assert response.status_code == 201, response.content
    return response.json()


def sent_deposit(client: Client, patient, **fields) -> dict:
    deposit = create_deposit(client, patient, **fields)
    response = post_json(client, url(deposit, "send"))
    assert response.status_code == 200, response.content
    return response.json()


def link_path(deposit: dict) -> str:
    return urlsplit(deposit["patientLink"]).path


def connect_account(organization, account_id: str = "acct_1TestPractice") -> PaymentAccount:
    return PaymentAccount.objects.create(
        organization=organization, account_id=account_id, connected_at=timezone.now(), charges_enabled=True
    )


def deposit_events(organization, deposit_id=None, type: str | None = None) -> list[Event]:
    events = Event.objects.for_org(organization).filter(subject_type="deposit_request")
    if deposit_id is not None:
        events = events.filter(subject_id=str(deposit_id))
    if type:
        events = events.filter(type=type)
    return list(events.order_by("created_at", "id"))


def stored(organization, deposit_id) -> DepositRequest:
    return DepositRequest.objects.for_org(organization).get(id=deposit_id)
