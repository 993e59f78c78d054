"""Inbound attachments: stored with the message, copied from the provider to durable storage by the Celery queue
(retries with backoff, unavailable once the attempts run out or the provider's copy is gone), downloadable through
GET /conversations/{id}/messages/{messageId}/attachments/{attachmentId}, and deleted with the patient.

The providers' media APIs are a real local HTTP server (pytest-httpserver): Twilio's basic-auth MediaUrl with its
redirect to a signed URL, the WhatsApp Cloud API's two-step Graph lookup, Resend's received-email attachment API.
Reaching a loopback server is the SSRF guard's development allowance (SVC_WEBHOOKS_ALLOW_LOOPBACK with DEBUG)."""

import base64
import json
import uuid

import pytest
from django.core.files.storage import storages
from django.utils import timezone
from werkzeug import Response

from apps.conversations import attachments
from apps.conversations.models import ChannelConnection, Conversation, Kind, Message, MessageAttachment
from apps.conversations.tasks import copy_attachment, sweep_attachments
from tests.conversations.conftest import AUTH_TOKEN, deliver
from tests.factories import PatientFactory

ACCOUNT_SID = "AC" + "0" * 32
BASIC = "Basic " + base64.b64encode(f"{ACCOUNT_SID}:{AUTH_TOKEN}".encode()).decode()
PHOTO = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 40 + b"\xff\xd9"  # a JPEG-looking 10 KiB
MEDIA_PATH = f"/2010-04-01/Accounts/{ACCOUNT_SID}/Messages/MM1/Media/ME1"
PATIENT_NUMBER = "+393331234567"


@pytest.fixture(autouse=True)
def media_settings(settings, tmp_path):
    """Loopback provider URLs allowed (development allowance), and this test's own storage folder."""
    settings.DEBUG = True
    settings.SVC_WEBHOOKS_ALLOW_LOOPBACK = True
    settings.SVC_MEDIA_STORAGE_ALIAS = "attachments"
    settings.STORAGES = {
        **settings.STORAGES,
        "attachments": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media")},
        },
    }
    return settings


@pytest.fixture
def patient(owner):
    return PatientFactory(organization=owner.organization, phone_mobile=PATIENT_NUMBER)


def mms(url: str, n: int = 1, content_type: str = "image/jpeg") -> dict:
    return {
        "MessageSid": f"MM{n:032d}",
        "AccountSid": ACCOUNT_SID,
        "From": PATIENT_NUMBER,
        "To": "+390212345678",
        "Body": "Ecco la foto",
        "NumMedia": "1",
        "MediaUrl0": url,
        "MediaContentType0": content_type,
    }


def serve_photo(httpserver, path: str = MEDIA_PATH, **response):
    """Twilio's media resource: basic auth with the account SID and auth token (anything else finds no handler,
    which pytest-httpserver answers 500)."""
    httpserver.expect_request(path, method="GET", headers={"Authorization": BASIC}).respond_with_data(
        PHOTO, content_type="image/jpeg", **response
    )


def the_attachment(owner) -> MessageAttachment:
    return MessageAttachment.objects.for_org(owner.organization).select_related("message__conversation").get()


def download_url(attachment: MessageAttachment) -> str:
    message = attachment.message
    return f"/conversations/{message.conversation_id}/messages/{message.id}/attachments/{attachment.id}"


def stored(attachment: MessageAttachment) -> bytes:
    with storages["attachments"].open(attachment.storage_name, "rb") as handle:
        return handle.read()


def assert_error(response, status: int, code: str) -> None:
    assert response.status_code == status, response.content
    assert response.json()["code"] == code


def test_an_mms_photo_is_copied_with_basic_auth_and_downloads_with_its_type(owner, api, patient, inbound, httpserver):
    serve_photo(httpserver)
    assert inbound(mms(httpserver.url_for(MEDIA_PATH))).status_code == 200

    attachment = the_attachment(owner)
    assert attachment.state == MessageAttachment.State.STORED, attachment.last_error
    assert (attachment.size, attachment.attempts, attachment.last_error) == (len(PHOTO), 0, "")
    assert attachment.storage_name == f"conversations/{owner.organization.id}/{attachment.message_id}/{attachment.id}"
    assert stored(attachment) == PHOTO
    assert len(httpserver.log) == 1

    # The message lists it as stored; the route streams the bytes.
    messages = api.get(f"/conversations/{attachment.message.conversation_id}/messages").json()["items"]
    assert messages[0]["attachments"] == [
        {"id": str(attachment.id), "contentType": "image/jpeg", "state": "stored", "size": len(PHOTO)}
    ]
    response = api.get(download_url(attachment))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == PHOTO
    assert response["Content-Type"] == "image/jpeg"
    assert response["Content-Disposition"] == 'attachment; filename="attachment-1.jpg"'
    assert response["X-Content-Type-Options"] == "nosniff"


def test_the_redirect_to_the_signed_url_is_followed_without_the_credentials(owner, patient, inbound, httpserver):
    """Twilio answers the MediaUrl with a redirect to a signed URL on another host: followed, the basic auth kept
    for Twilio's origin only (here 127.0.0.1 is the other host of the same server)."""
    signed = httpserver.url_for("/signed/ME1").replace("localhost", "127.0.0.1") + "?Expires=1&Signature=abc"
    httpserver.expect_request(MEDIA_PATH, headers={"Authorization": BASIC}).respond_with_response(
        Response(status=307, headers={"Location": signed})
    )
    seen = []

    def signed_file(request):
        seen.append(request.headers.get("Authorization"))
        return Response(PHOTO, content_type="image/jpeg")

    httpserver.expect_request("/signed/ME1").respond_with_handler(signed_file)
    inbound(mms(httpserver.url_for(MEDIA_PATH)))

    attachment = the_attachment(owner)
    assert attachment.state == MessageAttachment.State.STORED, attachment.last_error
    assert stored(attachment) == PHOTO
    assert seen == [None]


def test_a_provider_error_is_retried_and_the_next_attempt_stores_it(owner, api, patient, inbound, httpserver):
    httpserver.expect_oneshot_request(MEDIA_PATH).respond_with_data("busy", status=500)
    serve_photo(httpserver)
    inbound(mms(httpserver.url_for(MEDIA_PATH)))

    attachment = the_attachment(owner)
    assert attachment.state == MessageAttachment.State.STORED
    assert attachment.attempts == 1  # the 500 was counted, then the retry succeeded
    assert attachment.last_error == ""
    assert [entry[1].status_code for entry in httpserver.log] == [500, 200]
    assert api.get(download_url(attachment)).status_code == 200


def test_a_failing_store_exhausts_five_attempts_and_the_download_is_gone(
    owner, api, patient, inbound, httpserver, media_settings, tmp_path
):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the storage folder should be")
    media_settings.STORAGES = {
        **media_settings.STORAGES,
        "attachments": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": blocker}},
    }
    serve_photo(httpserver)
    inbound(mms(httpserver.url_for(MEDIA_PATH)))

    attachment = the_attachment(owner)
    assert attachment.state == MessageAttachment.State.UNAVAILABLE
    assert (attachment.attempts, attachment.last_error, attachment.storage_name) == (5, "storage", "")
    assert len(httpserver.log) == 5  # fetched on each attempt, never stored
    assert_error(api.get(download_url(attachment)), 410, "ATTACHMENT_UNAVAILABLE")
    assert (
        api.get(f"/conversations/{attachment.message.conversation_id}/messages").json()["items"][0]["attachments"][0][
            "state"
        ]
        == "unavailable"
    )


def test_the_backoff_doubles_from_thirty_seconds(owner, patient, inbound, httpserver, monkeypatch):
    """The retries are published with countdowns of 30, 60, 120 and 240 s (eager in tests: they run at once)."""
    from config.celery import app

    countdowns = []
    original = app.Task.apply_async

    def recording(task, args=None, kwargs=None, **options):
        if task.name == copy_attachment.name:
            countdowns.append(options.get("countdown"))
        return original(task, args, kwargs, **options)

    monkeypatch.setattr(app.Task, "apply_async", recording)
    httpserver.expect_request(MEDIA_PATH).respond_with_data("busy", status=503)
    inbound(mms(httpserver.url_for(MEDIA_PATH)))

    attachment = the_attachment(owner)
    assert (attachment.state, attachment.attempts, attachment.last_error) == ("unavailable", 5, "provider_http_503")
    assert countdowns == [None, 30, 60, 120, 240]  # the first request, then one retry per failure but the last


def test_a_file_the_provider_no_longer_has_is_unavailable_at_once(owner, api, patient, inbound, httpserver):
    httpserver.expect_request(MEDIA_PATH).respond_with_data("gone", status=404)
    inbound(mms(httpserver.url_for(MEDIA_PATH)))

    attachment = the_attachment(owner)
    assert (attachment.state, attachment.attempts, attachment.last_error) == ("unavailable", 1, "provider_http_404")
    assert len(httpserver.log) == 1
    assert_error(api.get(download_url(attachment)), 410, "ATTACHMENT_UNAVAILABLE")


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "streamed"])
def test_a_file_over_the_cap_is_unavailable_without_retry(
    owner, patient, inbound, httpserver, monkeypatch, tmp_path, declared
):
    monkeypatch.setattr(attachments, "MAX_ATTACHMENT_BYTES", 1024)
    if declared:
        serve_photo(httpserver)
    else:  # chunked, no Content-Length: the cap is enforced on the bytes as they arrive
        httpserver.expect_request(MEDIA_PATH).respond_with_response(
            Response((PHOTO[i : i + 512] for i in range(0, len(PHOTO), 512)), content_type="image/jpeg")
        )
    inbound(mms(httpserver.url_for(MEDIA_PATH)))

    attachment = the_attachment(owner)
    assert (attachment.state, attachment.attempts, attachment.last_error) == ("unavailable", 1, "too_large")
    assert len(httpserver.log) == 1
    assert not (tmp_path / "media").exists() or not any(p.is_file() for p in (tmp_path / "media").rglob("*"))


def test_a_url_the_ssrf_guard_refuses_is_never_fetched(owner, patient, inbound, httpserver, media_settings):
    media_settings.SVC_WEBHOOKS_ALLOW_LOOPBACK = False  # production: http://localhost is refused before any request
    serve_photo(httpserver)
    inbound(mms(httpserver.url_for(MEDIA_PATH)))

    attachment = the_attachment(owner)
    assert (attachment.state, attachment.last_error) == ("unavailable", "unsafe_url")
    assert len(httpserver.log) == 0


@pytest.mark.django_db
def test_pending_answers_409_and_the_sweep_requests_the_lost_copy(
    owner, api, patient, connection, client, httpserver, django_capture_on_commit_callbacks, monkeypatch, time_machine
):
    """The copy request is published to the broker and nobody works it (a real worker is not running): the
    attachment waits, pending; ten minutes on, the sweep asks again and the copy is made."""
    from apps.conversations import inbound as inbound_processing
    from apps.conversations.models import InboundDelivery
    from config.celery import app

    serve_photo(httpserver)
    monkeypatch.setitem(app.conf, "task_always_eager", False)
    assert deliver(client, connection, mms(httpserver.url_for(MEDIA_PATH))).status_code == 200
    delivery = InboundDelivery.objects.for_org(owner.organization).get()
    with django_capture_on_commit_callbacks(execute=True):
        assert inbound_processing.inbound_process(delivery.id)
    monkeypatch.setitem(app.conf, "task_always_eager", True)

    attachment = the_attachment(owner)
    assert attachment.state == MessageAttachment.State.PENDING
    assert_error(api.get(download_url(attachment)), 409, "ATTACHMENT_NOT_READY")
    assert sweep_attachments() == 0  # too recent: its task may still be on its way
    assert len(httpserver.log) == 0

    time_machine.move_to(timezone.now() + timezone.timedelta(minutes=11))
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_attachments() == 1
    attachment.refresh_from_db()
    assert attachment.state == MessageAttachment.State.STORED
    assert api.get(download_url(attachment)).status_code == 200
    assert sweep_attachments() == 0


def test_copying_twice_copies_once(owner, patient, inbound, httpserver):
    serve_photo(httpserver)
    inbound(mms(httpserver.url_for(MEDIA_PATH)))
    attachment = the_attachment(owner)
    assert copy_attachment(str(attachment.id)) == "skipped"  # already stored: a duplicate task does nothing
    assert len(httpserver.log) == 1


def test_another_practice_gets_404_for_every_id(owner, api, outsider, patient, inbound, httpserver):
    serve_photo(httpserver)
    inbound(mms(httpserver.url_for(MEDIA_PATH)))
    attachment = the_attachment(owner)
    url = download_url(attachment)

    assert_error(outsider.api_client().get(url), 404, "NOT_FOUND")
    message, conversation = attachment.message, attachment.message.conversation
    assert_error(
        api.get(f"/conversations/{conversation.id}/messages/{message.id}/attachments/{uuid.uuid4()}"), 404, "NOT_FOUND"
    )
    assert_error(
        api.get(f"/conversations/{conversation.id}/messages/{uuid.uuid4()}/attachments/{attachment.id}"),
        404,
        "NOT_FOUND",
    )
    assert_error(
        api.get(f"/conversations/{uuid.uuid4()}/messages/{message.id}/attachments/{attachment.id}"), 404, "NOT_FOUND"
    )
    assert api.get(url).status_code == 200  # the owner's practice does see it


def test_a_role_without_inbox_work_is_refused(owner, member_factory, patient, inbound, httpserver):
    serve_photo(httpserver)
    inbound(mms(httpserver.url_for(MEDIA_PATH)))
    analyst = member_factory(role="analyst", organization=owner.organization)
    assert analyst.api_client().get(download_url(the_attachment(owner))).status_code == 403


def test_erasing_the_patient_deletes_the_stored_file_after_the_commit(
    owner, api, patient, inbound, httpserver, django_capture_on_commit_callbacks
):
    serve_photo(httpserver)
    inbound(mms(httpserver.url_for(MEDIA_PATH)))
    attachment = the_attachment(owner)
    storage = storages["attachments"]
    assert storage.exists(attachment.storage_name)

    with django_capture_on_commit_callbacks() as callbacks:
        response = api.delete(f"/patients/{patient.id}")
    assert response.status_code == 200, response.content
    assert not MessageAttachment.objects.for_org(owner.organization).exists()
    assert storage.exists(attachment.storage_name)  # nothing is deleted before the erasure commits
    for callback in callbacks:
        callback()
    assert not storage.exists(attachment.storage_name)


def test_erasing_another_patient_keeps_the_file(owner, api, patient, inbound, httpserver):
    serve_photo(httpserver)
    inbound(mms(httpserver.url_for(MEDIA_PATH)))
    attachment = the_attachment(owner)
    other = PatientFactory(organization=owner.organization)
    assert api.delete(f"/patients/{other.id}").status_code == 200
    assert storages["attachments"].exists(attachment.storage_name)


# --- the WhatsApp Cloud API and Resend: the two-step media lookups ---------------------------------------------


def connect(api, kind: str, address: str, credentials: dict) -> ChannelConnection:
    response = api.post(
        "/settings/channel-connections",
        json.dumps({"kind": kind, "name": f"Reception {kind}", "address": address, "credentials": credentials}),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return ChannelConnection.unscoped_objects.get(id=response.json()["id"])


def attachment_on(connection: ChannelConnection, patient, *, provider_message_id: str, **fields) -> MessageAttachment:
    """A received message with one attachment, as inbound processing stores it for this kind of connection."""
    organization = connection.organization
    now = timezone.now()
    conversation = Conversation.objects.for_org(organization).create(
        organization=organization,
        patient=patient,
        connection=connection,
        channel=connection.kind,
        contact_address=PATIENT_NUMBER,
        last_message_at=now,
        last_inbound_at=now,
    )
    message = Message.objects.for_org(organization).create(
        organization=organization,
        conversation=conversation,
        direction=Message.Direction.INBOUND,
        channel=connection.kind,
        status=Message.State.RECEIVED,
        provider_message_id=provider_message_id,
        occurred_at=now,
    )
    return MessageAttachment.objects.for_org(organization).create(
        organization=organization, message=message, position=0, **fields
    )


def test_a_whatsapp_media_id_is_resolved_through_the_graph_and_downloaded(
    owner, api, patient, httpserver, media_settings, django_capture_on_commit_callbacks
):
    media_settings.SVC_MESSAGING_APP_GRAPH_URL = httpserver.url_for("/v21.0")
    connection = connect(api, Kind.MESSAGING_APP, "106540352242922", {"accessToken": "EAAG-system-user-token"})
    bearer = {"Authorization": "Bearer EAAG-system-user-token"}
    cdn = httpserver.url_for("/whatsapp_business/attachments/") + "?mid=1037543291543636&ext=1&hash=ATs"
    httpserver.expect_request("/v21.0/1037543291543636", headers=bearer).respond_with_json(
        {
            "messaging_product": "whatsapp",
            "url": cdn,
            "mime_type": "image/jpeg",
            "sha256": "a" * 64,
            "file_size": str(len(PHOTO)),
            "id": "1037543291543636",
        }
    )
    httpserver.expect_request(
        "/whatsapp_business/attachments/",
        query_string={"mid": "1037543291543636", "ext": "1", "hash": "ATs"},
        headers=bearer,
    ).respond_with_data(PHOTO, content_type="application/octet-stream")
    attachment = attachment_on(
        connection, patient, provider_message_id="wamid.HBgM", provider_media_id="1037543291543636"
    )

    with django_capture_on_commit_callbacks(execute=True):
        attachments.request_copies([attachment.id])

    attachment.refresh_from_db()
    assert attachment.state == MessageAttachment.State.STORED, attachment.last_error
    assert stored(attachment) == PHOTO
    assert attachment.content_type == "image/jpeg"  # from the Graph's mime_type
    response = api.get(download_url(attachment))
    assert response.status_code == 200 and response["Content-Type"] == "image/jpeg"
    assert b"".join(response.streaming_content) == PHOTO


def test_a_whatsapp_token_the_graph_refuses_is_retried_then_unavailable(
    owner, api, patient, httpserver, media_settings, django_capture_on_commit_callbacks
):
    media_settings.SVC_MESSAGING_APP_GRAPH_URL = httpserver.url_for("/v21.0")
    connection = connect(api, Kind.MESSAGING_APP, "106540352242922", {"accessToken": "expired"})
    httpserver.expect_request("/v21.0/1037543291543636").respond_with_json({"error": {"code": 190}}, status=401)
    attachment = attachment_on(connection, patient, provider_message_id="wamid.X", provider_media_id="1037543291543636")

    with django_capture_on_commit_callbacks(execute=True):
        attachments.request_copies([attachment.id])

    attachment.refresh_from_db()
    assert (attachment.state, attachment.attempts, attachment.last_error) == ("unavailable", 5, "provider_http_401")
    assert len([request for request, _ in httpserver.log if request.path.endswith("/1037543291543636")]) == 5
    connection.refresh_from_db()  # the platform refusing the number's token shows on the connection
    assert connection.health == "degraded" and "refused the connection's credentials" in connection.health_reason


def test_an_email_attachment_is_fetched_from_the_received_email_api(
    owner, api, patient, httpserver, media_settings, django_capture_on_commit_callbacks
):
    media_settings.SVC_EMAIL_PROVIDER_API_URL = httpserver.url_for("/resend")
    media_settings.SVC_EMAIL_PROVIDER_API_KEY = "re_platform_key"
    connection = connect(api, Kind.EMAIL, "reception", {})
    email_id, attachment_id = "4ef9a417-02e9-4d39-ad75-9611e0fcc33c", "2a0c9ce0-3112-4728-976e-47ddcd16a318"
    download = httpserver.url_for("/resend-cdn/ricetta.pdf") + "?token=signed"
    httpserver.expect_request(
        f"/resend/emails/receiving/{email_id}/attachments/{attachment_id}",
        headers={"Authorization": "Bearer re_platform_key"},
    ).respond_with_json(
        {
            "object": "attachment",
            "id": attachment_id,
            "filename": "ricetta.pdf",
            "content_type": "application/pdf",
            "download_url": download,
            "expires_at": "2030-01-01T00:00:00Z",
        }
    )
    seen = []

    def pdf(request):
        seen.append(request.headers.get("Authorization"))
        return Response(b"%PDF-1.7 ricetta", content_type="application/pdf")

    httpserver.expect_request("/resend-cdn/ricetta.pdf").respond_with_handler(pdf)
    attachment = attachment_on(
        connection,
        patient,
        provider_message_id=email_id,
        provider_media_id=attachment_id,
        content_type="application/pdf",
    )

    with django_capture_on_commit_callbacks(execute=True):
        attachments.request_copies([attachment.id])

    attachment.refresh_from_db()
    assert attachment.state == MessageAttachment.State.STORED, attachment.last_error
    assert stored(attachment) == b"%PDF-1.7 ricetta"
    assert seen == [None]  # the signed download URL gets no API key
    response = api.get(download_url(attachment))
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'attachment; filename="attachment-1.pdf"'


def test_without_an_email_api_key_the_attachment_is_unavailable_at_once(
    owner, api, patient, httpserver, media_settings, django_capture_on_commit_callbacks
):
    media_settings.SVC_EMAIL_PROVIDER_API_KEY = ""
    connection = connect(api, Kind.EMAIL, "reception", {})
    attachment = attachment_on(connection, patient, provider_message_id="e1", provider_media_id="a1")

    with django_capture_on_commit_callbacks(execute=True):
        attachments.request_copies([attachment.id])

    attachment.refresh_from_db()
    assert (attachment.state, attachment.attempts, attachment.last_error) == ("unavailable", 1, "not_configured")


def test_a_copy_in_progress_holds_a_lease_and_a_lapsed_lease_is_taken_over(owner, api, patient, httpserver):
    """The copy runs with no transaction open; its lease keeps a second task off it until it lapses (a dead worker)."""
    serve_photo(httpserver)
    connection = connect(api, Kind.SMS, "+390212345679", {"accountSid": "AC" + "0" * 32, "authToken": AUTH_TOKEN})
    attachment = attachment_on(
        connection, patient, provider_message_id="SM-lease", provider_url=httpserver.url_for(MEDIA_PATH)
    )
    held = timezone.now() + timezone.timedelta(minutes=4)
    MessageAttachment.objects.for_org(owner.organization).filter(id=attachment.id).update(claimed_until=held)
    assert copy_attachment(str(attachment.id)) == "skipped"
    assert len(httpserver.log) == 0

    lapsed = timezone.now() - timezone.timedelta(seconds=1)
    MessageAttachment.objects.for_org(owner.organization).filter(id=attachment.id).update(claimed_until=lapsed)
    assert copy_attachment(str(attachment.id)) == "stored"
    attachment.refresh_from_db()
    assert attachment.state == MessageAttachment.State.STORED and attachment.claimed_until is None
    assert stored(attachment) == PHOTO
