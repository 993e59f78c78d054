"""POST /webhooks/telephony-messaging/{token}: Telnyx Messaging callbacks signed with Ed25519 (a key pair generated
per test), the receiving number resolving the practice's connection, parking of the account's other numbers, and
the ingest-review queue (list, replay into a connection, dismiss) with its tenancy."""

import json
import threading
import time

import psycopg
import pytest
from django.conf import settings
from django.db import connection as database
from django.utils import timezone

from apps.conversations.models import ContactBlock, InboundDelivery, Message, ParkedCallback
from apps.events.models import Event
from tests.conversations.conftest import TelnyxAccount, connect

NUMBER = "+14155550100"
OTHER_NUMBER = "+14155550199"  # on the same telephony account, not connected (yet)
PATIENT = "+393331112233"


@pytest.fixture
def account():
    return TelnyxAccount()


@pytest.fixture
def line(api, account):
    return connect(api, "telephony_messaging", NUMBER, {"publicKey": account.public_key})


def event(kind: str = "message.received", *, to: str = NUMBER, sender: str = PATIENT, text: str = "Ciao", **payload):
    message_id = payload.pop("id", "40318f8a-5a3c-4b1e-9d8e-2f5c3c1d0a11")
    return {
        "data": {
            "event_type": kind,
            "id": "b301ed3f-1490-491f-995f-6e64e69674d4",
            "occurred_at": "2026-11-26T08:00:00.000+00:00",
            "record_type": "event",
            "payload": {
                "id": message_id,
                "direction": "inbound" if kind == "message.received" else "outbound",
                "type": "SMS",
                "from": {"phone_number": sender},
                "to": [{"phone_number": to, "status": payload.pop("status", "webhook_delivered")}],
                "text": text,
                "media": payload.pop("media", []),
                **payload,
            },
        },
        "meta": {"attempt": 1, "delivered_to": "https://example.test/webhooks"},
    }


def post(client, line, body, account, *, timestamp=None, token=None, raw=None, **headers):
    raw = raw if raw is not None else json.dumps(body).encode()
    signed = account.headers(raw, int(timestamp if timestamp is not None else time.time()))
    return client.post(
        f"/webhooks/telephony-messaging/{token or line['routingToken']}",
        raw,
        content_type="application/json",
        headers={**signed, **headers},
    )


@pytest.fixture
def deliver(client, line, account, django_capture_on_commit_callbacks):
    def send(body, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return post(client, line, body, account, **kwargs)

    return send


def inbox(api) -> list[dict]:
    return api.get("/conversations").json()["items"]


def test_a_text_to_the_practice_number_lands_in_the_inbox(api, line, deliver):
    response = deliver(event(text="Vorrei spostare l'appuntamento"))
    assert response.status_code == 200, response.content
    assert response.json() == {"stored": 1, "duplicates": 0, "parked": False}
    [conversation] = inbox(api)
    assert conversation["channel"] == "telephony_messaging" and conversation["contactAddress"] == PATIENT
    [message] = api.get(f"/conversations/{conversation['id']}/messages").json()["items"]
    assert message["body"] == "Vorrei spostare l'appuntamento" and message["direction"] == "inbound"
    assert api.get(f"/settings/channel-connections/{line['id']}").json()["status"] == "active"

    again = deliver(event(text="Vorrei spostare l'appuntamento"))  # Telnyx retries with the same message id
    assert again.json() == {"stored": 0, "duplicates": 1, "parked": False}
    assert Message.objects.unscoped().count() == 1


@pytest.mark.parametrize(
    ("case", "expected"),
    [("wrong_key", 401), ("stale", 401), ("future", 401), ("no_signature", 401), ("tampered", 401)],
)
def test_signature_refusals_store_nothing(client, line, account, case, expected):
    body = event()
    raw = json.dumps(body).encode()
    if case == "wrong_key":
        response = post(client, line, body, TelnyxAccount())
    elif case == "stale":
        response = post(client, line, body, account, timestamp=time.time() - 301)
    elif case == "future":
        response = post(client, line, body, account, timestamp=time.time() + 301)
    elif case == "no_signature":
        response = client.post(
            f"/webhooks/telephony-messaging/{line['routingToken']}", raw, content_type="application/json"
        )
    else:
        headers = account.headers(raw, int(time.time()))
        response = client.post(
            f"/webhooks/telephony-messaging/{line['routingToken']}",
            raw.replace(b"Ciao", b"Ciaa"),
            content_type="application/json",
            headers=headers,
        )
    assert response.status_code == expected, response.content
    assert response.json()["code"] == "CALLBACK_SIGNATURE_INVALID"
    assert not InboundDelivery.objects.unscoped().exists() and not ParkedCallback.objects.exists()


def test_unknown_token_oversize_wrong_type_and_malformed_bodies(client, line, account):
    assert post(client, line, event(), account, token="no-such-token").status_code == 404
    huge = json.dumps(event(text="x" * (256 * 1024))).encode()
    assert post(client, line, None, account, raw=huge).status_code == 413
    form = client.post(
        f"/webhooks/telephony-messaging/{line['routingToken']}",
        b"a=b",
        content_type="application/x-www-form-urlencoded",
        headers=account.headers(b"a=b", int(time.time())),
    )
    assert form.status_code == 415
    broken = post(client, line, None, account, raw=b"{not json")
    assert broken.status_code == 400 and broken.json()["details"]["fields"] == {"body": ["is not JSON"]}
    no_to = event()
    no_to["data"]["payload"]["to"] = []
    response = post(client, line, no_to, account)
    assert response.status_code == 400 and "data.payload.to" in response.json()["details"]["fields"]
    assert not InboundDelivery.objects.unscoped().exists()


def test_another_number_of_the_account_is_parked_then_replayed_into_its_new_connection(
    api, owner, line, deliver, django_capture_on_commit_callbacks, account
):
    response = deliver(event(to=OTHER_NUMBER, text="Buongiorno", id="msg-other-1"))
    assert response.status_code == 200 and response.json()["parked"] is True
    assert inbox(api) == []

    [parked] = api.get("/ingest-review").json()["items"]
    assert parked["kind"] == "telephony_messaging" and parked["receivingAddress"] == OTHER_NUMBER
    assert parked["state"] == "parked" and parked["reason"] == "address_not_connected"
    assert parked["items"] == [
        {"type": "message", "sender": PATIENT, "body": "Buongiorno", "mediaCount": 0, "status": None}
    ]
    assert api.get(f"/ingest-review/{parked['id']}").json()["id"] == parked["id"]

    wrong_kind = connect(api, "sms", "+390299999999", {"accountSid": "AC" + "0" * 32, "authToken": "t"})
    refused = api.post(
        f"/ingest-review/{parked['id']}/replay", {"connectionId": wrong_kind["id"]}, content_type="application/json"
    )
    assert refused.status_code == 400 and "connectionId" in refused.json()["details"]["fields"]

    second = connect(api, "telephony_messaging", OTHER_NUMBER, {"publicKey": account.public_key})
    with django_capture_on_commit_callbacks(execute=True):
        replayed = api.post(
            f"/ingest-review/{parked['id']}/replay", {"connectionId": second["id"]}, content_type="application/json"
        )
    assert replayed.status_code == 200, replayed.content
    assert replayed.json()["stored"] == 1 and replayed.json()["parked"]["state"] == "replayed"
    assert replayed.json()["parked"]["replayedIntoId"] == second["id"]
    assert replayed.json()["parked"]["decidedById"] == str(owner.user.id)
    [conversation] = inbox(api)
    assert conversation["connectionId"] == second["id"]

    again = api.post(
        f"/ingest-review/{parked['id']}/replay", {"connectionId": second["id"]}, content_type="application/json"
    )
    assert again.status_code == 409 and again.json()["code"] == "PARKED_CALLBACK_ALREADY_DECIDED"
    assert api.get("/ingest-review").json()["items"] == []
    assert len(api.get("/ingest-review?state=replayed").json()["items"]) == 1

    # Now connected: the provider's next text to that number goes straight to the inbox.
    assert deliver(event(to=OTHER_NUMBER, id="msg-other-2")).json()["parked"] is False


def test_dismiss_and_the_review_queue_is_the_practices_own(api, line, deliver, outsider, member_factory, owner):
    deliver(event(to=OTHER_NUMBER))
    [parked] = api.get("/ingest-review").json()["items"]

    theirs = outsider.api_client()
    assert theirs.get("/ingest-review").json()["items"] == []
    assert theirs.get(f"/ingest-review/{parked['id']}").status_code == 404
    assert theirs.post(f"/ingest-review/{parked['id']}/dismiss").status_code == 404
    their_line = connect(theirs, "telephony_messaging", "+14155550123", {"publicKey": TelnyxAccount().public_key})
    stolen = api.post(
        f"/ingest-review/{parked['id']}/replay", {"connectionId": their_line["id"]}, content_type="application/json"
    )
    assert stolen.status_code == 400  # their connection is not one of ours

    front_desk = member_factory(role="front_desk", organization=owner.organization).api_client()
    assert front_desk.get("/ingest-review").status_code == 200  # settings:read
    assert front_desk.post(f"/ingest-review/{parked['id']}/dismiss").status_code == 403

    dismissed = api.post(f"/ingest-review/{parked['id']}/dismiss")
    assert dismissed.status_code == 200 and dismissed.json()["state"] == "dismissed"
    assert api.post(f"/ingest-review/{parked['id']}/dismiss").status_code == 409
    assert api.get("/ingest-review?state=dismissed").json()["items"][0]["id"] == parked["id"]
    assert api.get("/ingest-review?state=nonsense").status_code == 400


def test_a_number_connected_by_another_practice_is_parked_for_the_operators_only(api, line, deliver, outsider):
    """Signed with our account's key but for their number: neither practice sees it (the token's practice must not
    read their patient's text, and their number is not on our account); the operators decide."""
    theirs = outsider.api_client()
    connect(theirs, "telephony_messaging", OTHER_NUMBER, {"publicKey": TelnyxAccount().public_key})
    response = deliver(event(to=OTHER_NUMBER))
    assert response.json()["parked"] is True
    assert theirs.get("/conversations").json()["items"] == [] and theirs.get("/ingest-review").json()["items"] == []
    assert api.get("/ingest-review").json()["items"] == []
    parked = ParkedCallback.objects.get()
    assert parked.organization_id is None and parked.receiving_address == OTHER_NUMBER


def test_delivery_statuses_move_our_message_forward_once(api, owner, line, deliver):
    deliver(event())
    [conversation] = inbox(api)
    sent = Message.objects.for_org(owner.organization).create(
        organization=owner.organization,
        conversation_id=conversation["id"],
        direction="outbound",
        channel="telephony_messaging",
        status="sent",
        body="A presto",
        provider_message_id="out-1",
        occurred_at=timezone.now(),
    )
    finalized = event("message.finalized", sender=NUMBER, to=PATIENT, id="out-1", status="delivered")
    assert deliver(finalized).status_code == 200
    late = event("message.sent", sender=NUMBER, to=PATIENT, id="out-1", status="sent")
    assert deliver(late).status_code == 200
    sent.refresh_from_db()
    assert sent.status == "delivered"
    [changed] = Event.objects.for_org(owner.organization).filter(type="message.status_changed")
    assert changed.subject_id == str(sent.id)
    assert changed.data["status"] == "delivered" and changed.data["previousStatus"] == "sent"
    assert "A presto" not in json.dumps(changed.data)


@pytest.mark.django_db(transaction=True)
def test_a_park_that_cannot_be_written_answers_503_with_retry_after(member_factory):
    """The parked table held by another session past the park's lock timeout: the whole callback is rolled back and
    the provider is told to retry."""
    owner = member_factory(role="owner")
    api = owner.api_client()
    account = TelnyxAccount()
    line = connect(api, "telephony_messaging", NUMBER, {"publicKey": account.public_key})
    params = database.get_connection_params()
    holder = psycopg.connect(
        host=params.get("host", "127.0.0.1"),
        port=params.get("port", 5432),
        user=params.get("user", "postgres"),
        dbname=settings.DATABASES["default"]["NAME"],
        autocommit=False,
    )
    locked = threading.Event()
    try:
        holder.execute("LOCK TABLE conversations_parkedcallback IN ACCESS EXCLUSIVE MODE")
        locked.set()
        response = post(api, line, event(to=OTHER_NUMBER), account)
    finally:
        holder.rollback()
        holder.close()
    assert response.status_code == 503, response.content
    assert response.json()["code"] == "CALLBACK_NOT_STORED" and response.headers["Retry-After"]
    assert not ParkedCallback.objects.exists()
    # The retry, once the table is free, is parked.
    assert post(api, line, event(to=OTHER_NUMBER), account).json()["parked"] is True


def test_a_stop_by_telephony_texting_blocks_the_number_for_sms_too(owner, line, deliver):
    """Both reach the patient as SMS: the contact block is the number's, under channel sms, whichever kind carried
    the STOP (the outbound recheck of part 2 reads it for both)."""
    deliver(event(text="STOP"))
    [block] = ContactBlock.objects.for_org(owner.organization).all()
    assert (block.channel, block.address, block.blocked, block.reason) == ("sms", PATIENT, True, "stop_keyword")


def test_nested_or_nul_bodies_are_400_not_500(client, line, account):
    deep = b'{"data": ' * 5000 + b"{}" + b"}" * 5000
    response = post(client, line, None, account, raw=deep)
    assert response.status_code == 400 and response.json()["details"]["fields"] == {"body": ["is nested too deeply"]}
    nul = post(client, line, event(text="ciao\u0000"), account)
    assert nul.status_code == 400 and "data.payload.text" in nul.json()["details"]["fields"]
    surrogate = post(client, line, None, account, raw=json.dumps(event()).encode().replace(b"Ciao", b"\\ud800"))
    assert surrogate.status_code == 400, surrogate.content
    assert not InboundDelivery.objects.unscoped().exists()


def test_analysts_do_not_read_the_review_queue(api, owner, line, deliver, member_factory):
    """Parked items carry patients' words: analysts read inbox counts only."""
    deliver(event(to=OTHER_NUMBER))
    analyst = member_factory(role="analyst", organization=owner.organization).api_client()
    assert analyst.get("/ingest-review").status_code == 403
    [parked] = api.get("/ingest-review").json()["items"]
    assert analyst.get(f"/ingest-review/{parked['id']}").status_code == 403


def test_decided_parked_callbacks_and_old_email_receipts_are_purged_hourly(owner):
    from apps.conversations.models import EmailEventReceipt
    from apps.conversations.tasks import purge_records

    old = timezone.now() - timezone.timedelta(days=31)
    kept = ParkedCallback.objects.create(
        organization=owner.organization, kind="sms", receiving_address="+1", reason="r", items=[], decided_at=old
    )  # still parked: it waits for a decision however old
    gone = ParkedCallback.objects.create(
        organization=owner.organization,
        kind="sms",
        receiving_address="+2",
        reason="r",
        items=[],
        state="dismissed",
        decided_at=old,
    )
    recent = ParkedCallback.objects.create(
        organization=owner.organization,
        kind="sms",
        receiving_address="+3",
        reason="r",
        items=[],
        state="replayed",
        decided_at=timezone.now(),
    )
    EmailEventReceipt.objects.create(digest="a" * 64)
    EmailEventReceipt.objects.create(digest="b" * 64)
    EmailEventReceipt.objects.filter(digest="a" * 64).update(
        first_seen_at=timezone.now() - timezone.timedelta(hours=49)
    )
    assert purge_records() == 2
    assert set(ParkedCallback.objects.values_list("id", flat=True)) == {kept.id, recent.id}
    assert not ParkedCallback.objects.filter(id=gone.id).exists()
    assert list(EmailEventReceipt.objects.values_list("digest", flat=True)) == ["b" * 64]
