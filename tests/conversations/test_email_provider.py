"""POST /webhooks/email-provider: the e-mail provider (Resend, signed by Svix). One URL for every practice: the
Svix headers (or their webhook-* names) over the body as received, a five-minute window, event ids of at most 512
bytes with a five-attempt, 24-hour receipt; email.received becomes an inbox message of the connection whose address
is a recipient (its text read from Resend's Received emails API, here a real local HTTP server that checks the API
key), under the platform-wide and per-sender inbound limits; bounces and complaints block the address and withdraw
e-mail consent; delivery events move our messages forward; unconnected addresses are parked."""

import json
import re
import time
import uuid

import pytest
from django.test import Client
from django.utils import timezone
from django_redis import get_redis_connection

from apps.conversations.models import (
    ContactBlock,
    Conversation,
    EmailEventReceipt,
    InboundDelivery,
    Kind,
    Message,
    MessageAttachment,
    ParkedCallback,
)
from apps.conversations.providers import receipt_digest
from apps.conversations.tasks import sweep_deliveries
from apps.events.models import Event
from apps.patients.models import MarketingConsent, Patient
from tests.conversations.conftest import connect, svix_headers
from tests.helpers import assert_error

URL = "/webhooks/email-provider"
INBOX = ""  # the address the service assigned to this test's connection (the `connection` fixture sets it)
MARIA = "Maria Rossi <maria@example.com>"
API_KEY = "re_test_2c7Lq9ZKx"
ANOTHER_SECRET = "whsec_YW5vdGhlci1zaWduaW5nLXNlY3JldC1vZi10aGUtcGxhdGZvcm0="
TEXT = "Buongiorno, da ieri ho dolore al molare in basso a destra."


# --- Resend's events, as Resend posts them ---------------------------------------------------------------------------


def new_id() -> str:
    return str(uuid.uuid4())


def event_id() -> str:
    return "msg_" + uuid.uuid4().hex[:27]


def received(email_id: str, *, sender: str = MARIA, to=None, subject: str = "Dolore al molare", attachments=()):
    to = to if to is not None else (INBOX,)
    return {
        "type": "email.received",
        "created_at": "2025-11-22T23:41:12.126Z",
        "data": {
            "email_id": email_id,
            "created_at": "2025-11-22T23:41:11.894719+00:00",
            "from": sender,
            "to": list(to),
            "bcc": [],
            "cc": [],
            "message_id": f"<{email_id}@mail.example.com>",
            "subject": subject,
            "attachments": list(attachments),
        },
    }


def outbound_event(kind: str, email_id: str, *, to=("maria@example.com",), sender: str | None = None, **extra):
    sender = sender or f"Studio Dentistico Rossi <{INBOX}>"
    return {
        "type": kind,
        "created_at": "2025-11-22T23:41:12.126Z",
        "data": {
            "broadcast_id": None,
            "created_at": "2025-11-22T23:41:11.894719+00:00",
            "email_id": email_id,
            "from": sender,
            "to": list(to),
            "subject": "Promemoria appuntamento",
            **extra,
        },
    }


def bounced(email_id: str, bounce_type: str = "Permanent", **options):
    bounce = {
        "message": "The recipient's email provider sent a hard bounce message.",
        "subType": "General" if bounce_type == "Permanent" else "MailboxFull",
        "type": bounce_type,
    }
    return outbound_event("email.bounced", email_id, bounce=bounce, **options)


def post(
    client,
    event=None,
    *,
    raw: bytes | None = None,
    event_id_: str | None = None,
    timestamp: int | None = None,
    headers: dict | None = None,
    content_type: str = "application/json",
):
    raw = json.dumps(event).encode() if raw is None else raw
    signed = svix_headers(
        raw, event_id=event_id_ or event_id(), timestamp=int(time.time()) if timestamp is None else timestamp
    )
    return client.post(URL, raw, content_type=content_type, headers={**signed, **(headers or {})})


@pytest.fixture
def connection(api):
    """The practice's inbox: the service assigns the address (reception.<private suffix>@inbound.practice.example)."""
    global INBOX
    made = connect(api, "email", "reception")
    INBOX = made["address"]
    return made


@pytest.fixture
def resend(httpserver, settings):
    """Resend's Received emails API on a local server: GET /emails/receiving/{id} answers only the platform's API
    key (anything else: 401, as Resend answers)."""
    settings.SVC_EMAIL_PROVIDER_API_URL = httpserver.url_for("/")
    settings.SVC_EMAIL_PROVIDER_API_KEY = API_KEY

    def serve(email_id: str, *, text: str | None = TEXT, html: str | None = None, sender: str = MARIA, **fields):
        httpserver.expect_request(
            f"/emails/receiving/{email_id}", method="GET", headers={"Authorization": f"Bearer {API_KEY}"}
        ).respond_with_json(
            {
                "object": "email",
                "id": email_id,
                "to": [INBOX],
                "from": sender,
                "created_at": "2025-11-22T23:41:11.894719+00:00",
                "subject": "Dolore al molare",
                "html": html if html is not None else f"<p>{text}</p>",
                "text": text,
                "bcc": [],
                "cc": [],
                "reply_to": [],
                "message_id": f"<{email_id}@mail.example.com>",
                "attachments": [],
                **fields,
            }
        )

    serve.server = httpserver
    return serve


def refuse_wrong_keys(httpserver):
    """After the right key's handlers (pytest-httpserver tries them in order): any other request answers 401."""
    httpserver.expect_request(re.compile(r"^/emails/receiving/.+"), method="GET").respond_with_json(
        {"statusCode": 401, "name": "missing_api_key", "message": "Missing API key in the authorization header"},
        status=401,
    )


@pytest.fixture
def deliver(client, connection, django_capture_on_commit_callbacks):
    """Post a signed event and run what the commit publishes (the drain, eager in tests)."""

    def send(event=None, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return post(client, event, **kwargs)

    return send


def create_patient(api, email: str = "Maria@Example.com", first_name: str = "Maria") -> dict:
    response = api.post(
        "/patients",
        json.dumps({"firstName": first_name, "lastName": "Rossi", "email": email}),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def receipt(event: str) -> EmailEventReceipt:
    return EmailEventReceipt.objects.get(digest=receipt_digest(event))


def messages_of(organization):
    return Message.objects.for_org(organization)


def nothing_stored(organization) -> bool:
    return not (
        InboundDelivery.objects.for_org(organization).exists()
        or Message.objects.for_org(organization).exists()
        or ParkedCallback.objects.exists()
    )


# --- inbound e-mail ---------------------------------------------------------------------------------------------


def test_an_inbound_email_lands_with_its_subject_and_the_text_fetched_from_the_provider(
    owner, api, connection, resend, deliver
):
    patient = create_patient(api)
    email_id = new_id()
    resend(email_id)
    response = deliver(received(email_id))
    assert response.status_code == 200, response.content
    assert response.json() == {"stored": 1, "duplicates": 0, "parked": False}

    conversations = api.get("/conversations").json()["items"]
    assert len(conversations) == 1
    conversation = conversations[0]
    assert conversation["patient"]["id"] == patient["id"] and conversation["channel"] == "email"
    assert conversation["connectionId"] == connection["id"]
    assert conversation["contactAddress"] == "maria@example.com"
    messages = api.get(f"/conversations/{conversation['id']}/messages").json()["items"]
    assert [(m["direction"], m["channel"], m["subject"], m["body"], m["status"]) for m in messages] == [
        ("inbound", "email", "Dolore al molare", TEXT, "received")
    ]
    assert Message.objects.for_org(owner.organization).get().provider_message_id == email_id

    (request, answer), *others = resend.server.log
    assert others == [] and answer.status_code == 200
    assert request.path == f"/emails/receiving/{email_id}" and request.headers["Authorization"] == f"Bearer {API_KEY}"

    assert not InboundDelivery.objects.for_org(owner.organization).exists()
    assert api.get(f"/settings/channel-connections/{connection['id']}").json()["status"] == "active"
    events = Event.objects.for_org(owner.organization).filter(type__in=["conversation.created", "message.received"])
    assert sorted(events.values_list("type", flat=True)) == ["conversation.created", "message.received"]
    assert all("molare" not in json.dumps(event.data) for event in events)  # neither subject nor text in events
    assert not Patient.objects.for_org(owner.organization).filter(status="enquiry").exists()


def test_the_html_part_becomes_text_when_there_is_no_plain_text(owner, api, connection, resend, deliver):
    email_id = new_id()
    html = "<html><head><style>p{color:red}</style></head><body><p>Solo <strong>HTML</strong> &amp; testo</p>"
    resend(
        email_id, text=None, html=html + "<p>seconda riga</p><img src='data:image/png;base64,AAAA'><script>x()</script>"
    )
    deliver(received(email_id))
    assert messages_of(owner.organization).get().body == "Solo HTML & testo\nseconda riga"


def test_an_unknown_sender_becomes_an_enquiry_with_their_address(owner, api, connection, resend, deliver):
    email_id = new_id()
    resend(email_id, sender="Luca Bianchi <Luca.Bianchi@example.org>")
    deliver(received(email_id, sender="Luca Bianchi <Luca.Bianchi@example.org>"))
    patient = Patient.objects.for_org(owner.organization).get()
    assert patient.status == "enquiry" and patient.email == "luca.bianchi@example.org"
    conversation = api.get("/conversations").json()["items"][0]
    assert conversation["patient"]["id"] == str(patient.id)
    assert conversation["contactAddress"] == "luca.bianchi@example.org"


def test_an_inbound_email_keeps_its_attachments(owner, connection, resend, deliver):
    email_id = new_id()
    resend(email_id)
    attachment = {
        "id": "2a0c9ce0-3112-4728-976e-47ddcd16a318",
        "filename": "radiografia.png",
        "content_type": "image/png",
        "content_disposition": "attachment",
        "content_id": None,
    }
    deliver(received(email_id, attachments=[attachment]))
    stored = MessageAttachment.objects.for_org(owner.organization).get()
    assert stored.message_id == messages_of(owner.organization).get().id
    assert stored.content_type == "image/png" and stored.provider_media_id == attachment["id"]


def test_the_provider_api_answers_only_the_platforms_key(owner, api, connection, resend, deliver, settings):
    email_id = new_id()
    resend(email_id)
    refuse_wrong_keys(resend.server)
    settings.SVC_EMAIL_PROVIDER_API_KEY = "re_not_the_platforms_key"
    assert deliver(received(email_id)).status_code == 200  # stored: the text is read while processing

    assert not messages_of(owner.organization).exists()
    waiting = InboundDelivery.objects.for_org(owner.organization).get()
    assert waiting.state == "received" and waiting.attempts == 1 and waiting.error == "EmailBodyUnavailable"
    assert [answer.status_code for _, answer in resend.server.log] == [401]

    settings.SVC_EMAIL_PROVIDER_API_KEY = API_KEY  # the key is fixed: the sweep's retry reads the text
    InboundDelivery.objects.for_org(owner.organization).update(created_at=timezone.now() - timezone.timedelta(hours=1))
    assert sweep_deliveries() == 1
    assert messages_of(owner.organization).get().body == TEXT


def test_a_second_delivery_of_a_stored_event_changes_nothing(owner, connection, resend, deliver):
    email_id, event = new_id(), event_id()
    resend(email_id)
    assert deliver(received(email_id), event_id_=event).json() == {"stored": 1, "duplicates": 0, "parked": False}
    again = deliver(received(email_id), event_id_=event)
    assert again.status_code == 200
    assert again.json() == {"stored": 0, "duplicates": 1, "parked": False}
    assert messages_of(owner.organization).count() == 1
    assert len(resend.server.log) == 1  # the text was read once
    assert receipt(event).state == "stored" and receipt(event).attempts == 1


def test_webhook_header_names_are_accepted(owner, client, connection, resend, django_capture_on_commit_callbacks):
    email_id, event = new_id(), event_id()
    resend(email_id)
    raw = json.dumps(received(email_id)).encode()
    signed = svix_headers(raw, event_id=event, timestamp=int(time.time()))
    headers = {name.replace("svix-", "webhook-"): value for name, value in signed.items()}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(URL, raw, content_type="application/json", headers=headers)
    assert response.status_code == 200, response.content
    assert messages_of(owner.organization).get().body == TEXT
    assert receipt(event).state == "stored"


def test_a_co_recipient_that_is_not_ours_is_nobodys_business(owner, connection, resend, deliver):
    email_id = new_id()
    resend(email_id)
    response = deliver(received(email_id, to=[INBOX, "Collega <collega@altro-studio.example>"]))
    assert response.json() == {"stored": 1, "duplicates": 0, "parked": False}
    assert not ParkedCallback.objects.exists()
    assert messages_of(owner.organization).count() == 1


def test_an_event_for_an_address_no_connection_has_is_parked(owner, connection, deliver):
    response = deliver(received(new_id(), to=["Segreteria <segreteria@unconnected.example>"]))
    assert response.status_code == 200
    assert response.json() == {"stored": 0, "duplicates": 0, "parked": True}
    parked = ParkedCallback.objects.get()
    assert parked.organization is None and parked.kind == Kind.EMAIL
    assert parked.receiving_address == "segreteria@unconnected.example" and parked.state == "parked"
    assert [item["sender"] for item in parked.items] == ["maria@example.com"]
    assert not InboundDelivery.objects.for_org(owner.organization).exists()

    # A delivery event of an e-mail sent from an address not connected here is parked too.
    deliver(outbound_event("email.delivered", new_id(), sender="Altro <noreply@unconnected.example>"))
    assert ParkedCallback.objects.filter(receiving_address="noreply@unconnected.example").count() == 1


def test_recipients_at_two_unconnected_addresses_are_parked_each_under_its_own_address(owner, connection, deliver):
    """A parked row is replayed as a whole into one connection: two addresses must not share one."""
    first, second = "segreteria@unconnected.example", "direzione@elsewhere.example"
    assert deliver(received(new_id(), to=[first, second])).json()["parked"] is True
    parked = {row.receiving_address: row for row in ParkedCallback.objects.all()}
    assert sorted(parked) == sorted([first, second])
    for address, row in parked.items():
        assert row.organization is None and {item["recipient"] for item in row.items} == {address}


def test_one_email_under_two_event_ids_is_stored_once(owner, connection, resend, deliver):
    email_id = new_id()
    resend(email_id)
    assert deliver(received(email_id)).json()["stored"] == 1
    assert deliver(received(email_id)).json() == {"stored": 0, "duplicates": 1, "parked": False}
    assert messages_of(owner.organization).count() == 1


def test_an_email_to_two_practices_inboxes_lands_in_each(owner, outsider, connection, resend, deliver):
    theirs = connect(outsider.api_client(), "email", "info")["address"]
    email_id = new_id()
    resend(email_id)
    response = deliver(received(email_id, to=[INBOX, theirs]))
    assert response.json() == {"stored": 2, "duplicates": 0, "parked": False}
    assert messages_of(owner.organization).get().body == TEXT
    assert messages_of(outsider.organization).get().body == TEXT
    assert Patient.objects.for_org(outsider.organization).get().email == "maria@example.com"


def test_without_a_signing_secret_the_callback_is_503_for_a_retry(owner, client, connection, settings):
    settings.SVC_EMAIL_WEBHOOK_SECRETS = []
    response = post(client, received(new_id()))
    assert_error(response, 503, "CALLBACK_NOT_STORED")
    assert response["Retry-After"]
    assert nothing_stored(owner.organization) and not EmailEventReceipt.objects.exists()


def test_another_practice_never_sees_the_email(owner, api, outsider, connection, resend, deliver):
    email_id = new_id()
    resend(email_id)
    deliver(received(email_id))
    conversation = api.get("/conversations").json()["items"][0]
    theirs = outsider.api_client()
    assert theirs.get("/conversations").json()["items"] == []
    for path in ("", "/messages"):
        assert_error(theirs.get(f"/conversations/{conversation['id']}{path}"), 404, "NOT_FOUND")


# --- signatures and headers ----------------------------------------------------------------------------------------


def signed_request(client, raw: bytes, headers: dict):
    return client.post(URL, raw, content_type="application/json", headers=headers)


@pytest.mark.parametrize(
    "alter",
    [
        pytest.param(lambda h, raw: ({**h, "svix-signature": "v1,bm90IHRoZSBzaWduYXR1cmU="}, raw), id="wrong"),
        pytest.param(
            lambda h, raw: (
                svix_headers(raw, event_id=h["svix-id"], timestamp=int(h["svix-timestamp"]), secret=ANOTHER_SECRET),
                raw,
            ),
            id="another-secret",
        ),
        pytest.param(lambda h, raw: ({k: v for k, v in h.items() if k != "svix-signature"}, raw), id="no-signature"),
        pytest.param(lambda h, raw: ({k: v for k, v in h.items() if k != "svix-timestamp"}, raw), id="no-timestamp"),
        pytest.param(lambda h, raw: ({k: v for k, v in h.items() if k != "svix-id"}, raw), id="no-id"),
        pytest.param(lambda h, raw: ({**h, "svix-id": "msg_another"}, raw), id="id-changed"),
        pytest.param(lambda h, raw: (h, raw.replace(b"Dolore", b"Fattura")), id="body-changed"),
        pytest.param(
            lambda h, raw: ({**h, "svix-signature": h["svix-signature"].replace("v1,", "v2,")}, raw),
            id="unknown-version",
        ),
        pytest.param(lambda h, raw: ({**h, "svix-timestamp": "yesterday"}, raw), id="timestamp-not-a-number"),
    ],
)
def test_a_wrong_or_missing_signature_is_401_and_stores_nothing(owner, client, connection, alter):
    raw = json.dumps(received(new_id())).encode()
    headers, body = alter(svix_headers(raw, event_id=event_id(), timestamp=int(time.time())), raw)
    assert_error(signed_request(client, body, headers), 401, "CALLBACK_SIGNATURE_INVALID")
    assert nothing_stored(owner.organization)
    assert not EmailEventReceipt.objects.exists()  # a refused delivery is no attempt


@pytest.mark.parametrize("skew", [-360, 360])
def test_a_timestamp_six_minutes_away_is_401(owner, client, connection, skew):
    response = post(client, received(new_id()), timestamp=int(time.time()) + skew)
    body = assert_error(response, 401, "CALLBACK_SIGNATURE_INVALID")
    assert "svix-timestamp" in body["message"]
    assert nothing_stored(owner.organization) and not EmailEventReceipt.objects.exists()


def test_a_timestamp_four_minutes_old_is_accepted(owner, connection, resend, deliver):
    email_id = new_id()
    resend(email_id)
    assert deliver(received(email_id), timestamp=int(time.time()) - 240).status_code == 200
    assert messages_of(owner.organization).count() == 1


def test_one_matching_signature_among_several_is_enough(owner, client, connection, resend, deliver):
    email_id, event = new_id(), event_id()
    resend(email_id)
    raw = json.dumps(received(email_id)).encode()
    headers = svix_headers(raw, event_id=event, timestamp=int(time.time()))
    stale = svix_headers(raw, event_id=event, timestamp=int(headers["svix-timestamp"]), secret=ANOTHER_SECRET)
    headers["svix-signature"] = f"{stale['svix-signature']} {headers['svix-signature']}"
    assert deliver(raw=raw, event_id_=event, headers=headers).status_code == 200
    assert messages_of(owner.organization).count() == 1


def test_a_rotated_secret_and_the_previous_one_both_verify(owner, connection, resend, deliver, settings):
    settings.SVC_EMAIL_WEBHOOK_SECRETS = [ANOTHER_SECRET, *settings.SVC_EMAIL_WEBHOOK_SECRETS]
    old, new = new_id(), new_id()
    resend(old)
    resend(new)
    assert deliver(received(old)).status_code == 200  # conftest signs with the previous secret
    raw = json.dumps(received(new)).encode()
    event = event_id()
    headers = svix_headers(raw, event_id=event, timestamp=int(time.time()), secret=ANOTHER_SECRET)
    assert deliver(raw=raw, event_id_=event, headers=headers).status_code == 200
    assert messages_of(owner.organization).count() == 2


def test_an_event_id_of_512_bytes_is_accepted_one_more_is_400(owner, client, connection, resend, deliver):
    too_long = "msg_" + "x" * 509
    body = assert_error(post(client, received(new_id()), event_id_=too_long), 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["svix-id"]
    assert nothing_stored(owner.organization) and not EmailEventReceipt.objects.exists()

    email_id, longest = new_id(), "msg_" + "x" * 508
    resend(email_id)
    assert deliver(received(email_id), event_id_=longest).status_code == 200
    assert receipt(longest).state == "stored"


def test_an_over_long_webhook_id_is_400_too(owner, client, connection):
    raw = json.dumps(received(new_id())).encode()
    signed = svix_headers(raw, event_id="msg_" + "y" * 600, timestamp=int(time.time()))
    headers = {name.replace("svix-", "webhook-"): value for name, value in signed.items()}
    body = assert_error(signed_request(client, raw, headers), 400, "VALIDATION_ERROR")
    assert "svix-id" in body["details"]["fields"]


# --- the body ------------------------------------------------------------------------------------------------------


def padded_to(event: dict, size: int) -> bytes:
    base = json.dumps({**event, "padding": ""}).encode()
    return base.replace(b'"padding": ""', b'"padding": "' + b"x" * (size - len(base)) + b'"')


def test_a_body_of_256_kib_is_received_one_byte_more_is_413(owner, client, connection, resend, deliver):
    email_id = new_id()
    over = padded_to(received(email_id), 256 * 1024 + 1)
    assert len(over) == 256 * 1024 + 1
    assert_error(post(client, raw=over), 413, "PAYLOAD_TOO_LARGE")
    assert nothing_stored(owner.organization) and not EmailEventReceipt.objects.exists()

    resend(email_id)
    at_cap = padded_to(received(email_id), 256 * 1024)
    assert deliver(raw=at_cap).status_code == 200
    assert messages_of(owner.organization).count() == 1


@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/plain"])
def test_a_body_that_is_not_json_is_415(owner, client, connection, content_type):
    assert_error(post(client, received(new_id()), content_type=content_type), 415, "UNSUPPORTED_MEDIA_TYPE")
    assert nothing_stored(owner.organization) and not EmailEventReceipt.objects.exists()


def without(event: dict, name: str) -> dict:
    return {**event, "data": {k: v for k, v in event["data"].items() if k != name}}


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param(b"{not json", "body", id="not-json"),
        pytest.param(b"[]", "body", id="a-list"),
        pytest.param(json.dumps({"type": "email.received"}).encode(), "data", id="no-data"),
        pytest.param(
            json.dumps({k: v for k, v in received("e").items() if k != "type"}).encode(), "type", id="no-type"
        ),
        pytest.param(json.dumps(without(received("e"), "email_id")).encode(), "data.email_id", id="no-email-id"),
        pytest.param(json.dumps(without(received("e"), "from")).encode(), "data.from", id="no-from"),
        pytest.param(json.dumps(received("e", to=[])).encode(), "data.to", id="no-recipient"),
        pytest.param(json.dumps(received("e", sender="not an address")).encode(), "data", id="from-not-an-address"),
        pytest.param(json.dumps({**received("e"), "data": ["e"]}).encode(), "data", id="data-not-an-object"),
        pytest.param(
            json.dumps({**received("e"), "data": {**received("e")["data"], "to": INBOX}}).encode(),
            "data.to",
            id="to-not-a-list",
        ),
        pytest.param(
            json.dumps(
                outbound_event("email.bounced", "e", sender="reception.x@inbound.practice.example", bounce="Permanent")
            ).encode(),
            "data.bounce",
            id="bounce-not-an-object",
        ),
    ],
)
def test_a_signed_event_that_is_not_resends_is_400_naming_the_field(owner, connection, raw, field):
    client = Client(raise_request_exception=False)  # a crash must show as the 500 it is, not as the test's error
    body = assert_error(post(client, raw=raw), 400, "VALIDATION_ERROR")
    assert field in body["details"]["fields"], body
    assert nothing_stored(owner.organization) and not EmailEventReceipt.objects.exists()


def test_events_with_nothing_for_the_inbox_are_acknowledged(owner, connection, deliver):
    opened = outbound_event("email.opened", new_id())
    event = event_id()
    assert deliver(opened, event_id_=event).json() == {"stored": 0, "duplicates": 0, "parked": False}
    assert nothing_stored(owner.organization)
    assert receipt(event).state == "stored"


# --- the inbound e-mail limits and the five-attempt, 24-hour receipt ------------------------------------------------


def forget_limits():
    redis = get_redis_connection("default")
    for key in redis.scan_iter("*inbound-email*"):
        redis.delete(key)


def test_refusals_by_the_limit_use_no_attempt_and_the_retry_is_stored(owner, connection, resend, deliver, settings):
    settings.SVC_INBOUND_EMAIL_ADDRESS_BUCKET = (1, 0.0001)
    first, second, event = new_id(), new_id(), event_id()
    resend(first)
    resend(second)
    assert deliver(received(first)).status_code == 200  # takes the inbox's only token
    for _ in range(6):  # more refusals than a receipt's five attempts
        response = deliver(received(second), event_id_=event)
        body = assert_error(response, 429, "RATE_LIMITED")
        assert int(response["Retry-After"]) >= 1 and body["details"]["retryAfter"] == int(response["Retry-After"])
    assert not EmailEventReceipt.objects.filter(digest=receipt_digest(event)).exists()
    assert messages_of(owner.organization).count() == 1

    forget_limits()
    assert deliver(received(second), event_id_=event).json() == {"stored": 1, "duplicates": 0, "parked": False}
    assert receipt(event).state == "stored" and receipt(event).attempts == 1
    assert messages_of(owner.organization).count() == 2


def test_after_five_attempts_the_event_is_settled(owner, connection, resend, deliver):
    """Attempts are deliveries that reached the receipt and were not stored (a store that failed): the sixth
    delivery finds five and settles the event; from then on it is acknowledged without effect."""
    second, event = new_id(), event_id()
    resend(second)
    EmailEventReceipt.objects.create(digest=receipt_digest(event), attempts=5)
    settled = deliver(received(second), event_id_=event)
    assert settled.status_code == 200, settled.content
    assert settled.json()["stored"] == 0
    assert receipt(event).state == "settled" and receipt(event).attempts == 5
    assert deliver(received(second), event_id_=event).status_code == 200  # and from then on
    assert messages_of(owner.organization).count() == 0
    assert not InboundDelivery.objects.for_org(owner.organization).exists()
    assert resend.server.log == []


def test_four_attempts_leave_one_more(owner, connection, resend, deliver):
    second, event = new_id(), event_id()
    resend(second)
    EmailEventReceipt.objects.create(digest=receipt_digest(event), attempts=4)
    assert deliver(received(second), event_id_=event).json()["stored"] == 1
    assert (receipt(event).state, receipt(event).attempts) == ("stored", 5)


def test_an_event_first_seen_more_than_24_hours_ago_is_settled(owner, connection, resend, deliver):
    second, event = new_id(), event_id()
    resend(second)
    EmailEventReceipt.objects.create(digest=receipt_digest(event), attempts=1)
    EmailEventReceipt.objects.filter(digest=receipt_digest(event)).update(
        first_seen_at=timezone.now() - timezone.timedelta(hours=24, minutes=1)
    )
    response = deliver(received(second), event_id_=event)
    assert response.status_code == 200 and response.json()["stored"] == 0
    assert receipt(event).state == "settled" and receipt(event).attempts == 1
    assert messages_of(owner.organization).count() == 0


def test_an_event_first_seen_23_hours_ago_is_still_received(owner, connection, resend, deliver):
    second, event = new_id(), event_id()
    resend(second)
    EmailEventReceipt.objects.create(digest=receipt_digest(event), attempts=1)
    EmailEventReceipt.objects.filter(digest=receipt_digest(event)).update(
        first_seen_at=timezone.now() - timezone.timedelta(hours=23)
    )
    assert deliver(received(second), event_id_=event).json()["stored"] == 1
    assert receipt(event).state == "stored"


def test_the_platform_wide_inbound_limit_answers_429(owner, connection, resend, deliver, settings):
    settings.SVC_INBOUND_EMAIL_BUCKET = (1, 0.0001)
    first, second = new_id(), new_id()
    resend(first)
    assert deliver(received(first)).status_code == 200
    response = deliver(received(second, sender="Luca Bianchi <luca@example.org>"))
    body = assert_error(response, 429, "RATE_LIMITED")
    assert int(response["Retry-After"]) >= 1 and body["details"]["retryAfter"] == int(response["Retry-After"])
    assert messages_of(owner.organization).count() == 1
    assert not Patient.objects.for_org(owner.organization).filter(email="luca@example.org").exists()

    # Delivery events are not inbound e-mail: the limit does not hold them back.
    ours = outbound_message(owner.organization, Conversation.objects.for_org(owner.organization).get(), "sent-1")
    assert deliver(outbound_event("email.delivered", "sent-1")).status_code == 200
    ours.refresh_from_db()
    assert ours.status == "delivered"


# --- bounces, complaints and delivery statuses ------------------------------------------------------------------------


def outbound_message(organization, conversation, email_id: str, state: str = "sent") -> Message:
    return Message.objects.for_org(organization).create(
        organization=organization,
        conversation=conversation,
        direction="outbound",
        channel="email",
        status=state,
        subject="Promemoria appuntamento",
        body="Le ricordiamo l'appuntamento di domani alle 10.",
        provider_message_id=email_id,
        occurred_at=timezone.now(),
    )


@pytest.fixture
def conversation(owner, api, connection, resend, deliver):
    """Maria (created through the API) wrote once: her e-mail conversation."""
    create_patient(api)
    email_id = new_id()
    resend(email_id)
    deliver(received(email_id))
    return Conversation.objects.for_org(owner.organization).get()


@pytest.mark.parametrize(
    ("make", "reason", "status"),
    [
        pytest.param(lambda email_id: bounced(email_id, "Permanent"), "bounce", "undelivered", id="permanent-bounce"),
        pytest.param(
            lambda email_id: outbound_event("email.complained", email_id), "complaint", "sent", id="complaint"
        ),
    ],
)
def test_a_permanent_bounce_or_a_complaint_blocks_the_address_and_withdraws_email_consent(
    owner, api, conversation, deliver, make, reason, status
):
    patient_id = str(conversation.patient_id)
    assert api.get(f"/patients/{patient_id}/marketing-consent").json()["emailOptOut"] is False
    message = outbound_message(owner.organization, conversation, "out-1")

    response = deliver(make("out-1"))
    assert response.status_code == 200, response.content

    block = ContactBlock.objects.for_org(owner.organization).get()
    assert (block.channel, block.address, block.blocked, block.needs_review) == (
        "email",
        "maria@example.com",
        True,
        False,
    )
    assert block.reason == f"email_{reason}"
    consent = api.get(f"/patients/{patient_id}/marketing-consent").json()
    assert consent["emailOptOut"] is True and consent["smsOptOut"] is False
    assert [(c["channel"], c["status"], c["source"]) for c in consent["current"]] == [
        ("email", "withdrawn", f"email_{reason}")
    ]
    assert api.get(f"/patients/{patient_id}").json()["emailOptOut"] is True
    message.refresh_from_db()
    assert message.status == status

    withdrawals = MarketingConsent.objects.for_org(owner.organization).filter(channel="email", status="withdrawn")
    assert withdrawals.count() == 1


def test_a_bounce_blocks_every_patient_behind_the_address(owner, api, connection, deliver):
    family = [create_patient(api, "famiglia@example.com", name) for name in ("Anna", "Bruno", "Carla")]
    deliver(bounced(new_id(), to=["Famiglia Verdi <famiglia@example.com>"]))
    for patient in family:
        assert api.get(f"/patients/{patient['id']}/marketing-consent").json()["emailOptOut"] is True
    assert ContactBlock.objects.for_org(owner.organization).get().address == "famiglia@example.com"


def test_a_transient_bounce_blocks_nothing(owner, api, conversation, deliver):
    deliver(bounced(new_id(), "Transient"))
    assert not ContactBlock.objects.for_org(owner.organization).exists()
    assert api.get(f"/patients/{conversation.patient_id}/marketing-consent").json()["emailOptOut"] is False


def test_a_retried_bounce_event_is_applied_once(owner, api, conversation, deliver):
    event = event_id()
    deliver(bounced("out-9"), event_id_=event)
    again = deliver(bounced("out-9"), event_id_=event)
    assert again.status_code == 200 and again.json()["stored"] == 0
    assert MarketingConsent.objects.for_org(owner.organization).filter(channel="email").count() == 1


def test_delivered_moves_our_email_forward_and_emits_one_event(owner, conversation, deliver):
    message = outbound_message(owner.organization, conversation, "4ef9a417-02e9-4d39-ad75-9611e0fcc33c")
    response = deliver(outbound_event("email.delivered", message.provider_message_id))
    assert response.status_code == 200
    assert response.json() == {"stored": 1, "duplicates": 0, "parked": False}
    message.refresh_from_db()
    assert message.status == "delivered" and message.status_changed_at is not None

    deliver(outbound_event("email.sent", message.provider_message_id))  # late
    deliver(outbound_event("email.delivery_delayed", message.provider_message_id))
    message.refresh_from_db()
    assert message.status == "delivered"
    changes = Event.objects.for_org(owner.organization).filter(
        type="message.status_changed", subject_id=str(message.id)
    )
    assert changes.count() == 1
    data = changes.get().data
    assert data["status"] == "delivered" and data["previousStatus"] == "sent" and data["channel"] == "email"
    assert "body" not in data and "appuntamento" not in json.dumps(data).lower()


def test_failed_before_delivery_marks_our_email_failed(owner, conversation, deliver):
    message = outbound_message(owner.organization, conversation, "out-failed")
    deliver(outbound_event("email.failed", "out-failed"))
    message.refresh_from_db()
    assert message.status == "failed"


def test_a_status_of_an_email_we_did_not_send_changes_nothing(owner, conversation, deliver):
    ours = outbound_message(owner.organization, conversation, "ours")
    assert deliver(outbound_event("email.delivered", "sent-from-the-providers-console")).status_code == 200
    ours.refresh_from_db()
    assert ours.status == "sent"
    assert not Event.objects.for_org(owner.organization).filter(type="message.status_changed").exists()


def test_response_body_is_json(client, connection):
    response = post(client, outbound_event("email.opened", new_id()))
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
