"""End to end: a reply is queued by the HTTP request and sent by a real Celery worker through the real HTTP client
to a local server speaking Twilio's Messages API; the provider's status callback then moves it to delivered."""

import json
import time
from urllib.parse import parse_qs

from django.test import Client
from werkzeug import Response

from apps.conversations.models import Message
from config.celery import app as celery_app
from tests.conversations.conftest import AUTH_TOKEN, PRACTICE_NUMBER, connect_sms
from tests.conversations.test_sms_status import status_post
from tests.factories import PatientFactory


def test_a_queued_reply_is_sent_by_a_worker_through_the_provider(start_worker, owner, httpserver, monkeypatch):
    monkeypatch.setitem(celery_app.conf, "task_always_eager", False)
    received = []

    def messages(request):
        received.append({k: v[0] for k, v in parse_qs(request.get_data(as_text=True)).items()})
        return Response(json.dumps({"sid": "SM" + "e" * 32, "status": "queued"}), status=201)

    httpserver.expect_request(f"/2010-04-01/Accounts/AC{'0' * 32}/Messages.json", method="POST").respond_with_handler(
        messages
    )
    worker = start_worker(SVC_OUTBOUND_TRANSPORT="provider", SVC_SMS_API_URL=httpserver.url_for("").rstrip("/"))
    api = owner.api_client()
    connection = connect_sms(api)
    patient = PatientFactory(organization=owner.organization, phone_mobile="+39 333 123 4567")
    data = {"patientId": str(patient.id), "connectionId": connection["id"], "body": "Confermato per domani"}
    response = api.post("/conversations", json.dumps(data), content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["message"]["status"] == "queued"

    message = Message.objects.for_org(owner.organization).get(id=response.json()["message"]["id"])
    deadline = time.monotonic() + 120
    while message.status == "queued":
        assert worker.poll() is None, worker.log()
        assert time.monotonic() < deadline, f"not sent within 120 s; worker log: {worker.log()}"
        time.sleep(0.1)
        message.refresh_from_db()
    assert (message.status, message.provider_message_id, message.sandbox) == ("sent", "SM" + "e" * 32, False)
    assert received[0]["To"] == "+393331234567" and received[0]["From"] == PRACTICE_NUMBER
    assert AUTH_TOKEN not in json.dumps(received)

    params = {
        "MessageSid": "SM" + "e" * 32,
        "MessageStatus": "delivered",
        "From": PRACTICE_NUMBER,
        "To": "+393331234567",
    }
    assert status_post(Client(), connection, params).status_code == 200
    while message.status != "delivered":
        assert time.monotonic() < deadline, f"status not applied within 120 s; worker log: {worker.log()}"
        time.sleep(0.1)
        message.refresh_from_db()
