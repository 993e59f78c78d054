"""The short-video platform's direct messages (TikTok Business Messaging): connecting a business account through
the platform's OAuth (POST /settings/channel-connections/short-video/connect, GET /webhooks/short-video/oauth/callback),
the signed webhook (POST /webhooks/short-video: TikTok-Signature over "t.body", 256 KiB cap, receipts, parking), the
DM reaching the inbox, and a staff reply sent through the real HTTP client to a local server speaking the Business
API (token exchange and refresh, message send, media download)."""

import hashlib
import hmac
import json
import time
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from werkzeug import Response

from apps.conversations import services
from apps.conversations.models import (
    ChannelConnection,
    ConnectState,
    Conversation,
    InboundDelivery,
    Message,
    MessageAttachment,
    ParkedCallback,
    ProviderReceipt,
)
from apps.events.models import Event
from tests.conftest import make_member
from tests.factories import PatientFactory
from tests.helpers import assert_error

CONNECT = "/settings/channel-connections/short-video/connect"
CALLBACK = "/webhooks/short-video/oauth/callback"
WEBHOOK = "/webhooks/short-video"
SECRET = "test-short-video-client-secret"  # config.settings.test
CLIENT_KEY = "test-short-video-client-key"
USER_ID = "7324509876543210001"  # the patient's platform user id
HANDLE = "maria.rossi"
THREAD = "u5JhpselBAhoPOlnH0tZ9y07kg=="  # the platform's conversation id between the business and the user
API = "/open_api/v1.3"


# --- the platform's side, as it speaks -----------------------------------------------------------------------------


def tiktok_signature(raw: bytes, timestamp: int | None = None, secret: str = SECRET) -> str:
    """As TikTok signs a webhook: t=<unix seconds>,s=<hex HMAC-SHA256(client secret, "t.body")>."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + raw, hashlib.sha256).hexdigest()
    return f"t={timestamp},s={digest}"


def dm(account: str, *, text: str = "Buongiorno, vorrei prenotare", message_id: str = "msg-in-1", **content) -> dict:
    """An im_receive_msg event for the business account `account`; `content` replaces parts of the message."""
    message = {
        "conversation_id": THREAD,
        "message_id": message_id,
        "timestamp": int(time.time() * 1000),
        "type": "text",
        "text": {"body": text},
        "from": HANDLE,
        "from_user": {"id": USER_ID},
        "to": "studio.rossi",
        "to_user": {"id": account},
        **content,
    }
    return {
        "client_key": CLIENT_KEY,
        "event": "im_receive_msg",
        "create_time": int(time.time()),
        "user_openid": account,
        "content": json.dumps(message),
    }


def post(client, body=None, *, raw: bytes | None = None, signature: str | None = None, content_type=None):
    raw = json.dumps(body).encode() if raw is None else raw
    headers = {} if signature == "" else {"TikTok-Signature": signature or tiktok_signature(raw)}
    return client.post(WEBHOOK, raw, content_type=content_type or "application/json", headers=headers)


# --- connecting -------------------------------------------------------------------------------------------------


def start(api, name: str | None = None) -> tuple[str, dict]:
    """A connection attempt: its state and the authorize URL's query."""
    response = api.post(CONNECT, json.dumps({"name": name} if name else {}), content_type="application/json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["expiresIn"] == 600
    query = {key: values[0] for key, values in parse_qs(urlsplit(body["authorizeUrl"]).query).items()}
    return query["state"], query


def connect(api, name: str | None = None) -> dict:
    """Connect through the sandbox: its authorize URL is our callback with a sandbox code."""
    state, query = start(api, name)
    response = Client().get(CALLBACK, {"code": query["code"], "state": state})
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def line(api) -> dict:
    return connect(api, "TikTok DMs")


@pytest.fixture
def patient(owner):
    return PatientFactory(organization=owner.organization, custom_fields={"shortVideoHandle": "@Maria.Rossi"})


@pytest.fixture
def deliver(client, django_capture_on_commit_callbacks):
    """Post a signed body and run what the commit publishes (the drain, eager in tests)."""

    def send(body=None, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return post(client, body, **kwargs)

    return send


def nothing_received(organization) -> bool:
    return not (
        InboundDelivery.objects.for_org(organization).exists()
        or Message.objects.for_org(organization).exists()
        or ProviderReceipt.objects.for_org(organization).exists()
        or ParkedCallback.objects.exists()
    )


def test_the_sandbox_connects_an_account_and_the_state_is_single_use(owner, api):
    state, query = start(api, "TikTok DMs")
    assert (
        urlsplit(api.post(CONNECT, content_type="application/json").json()["authorizeUrl"]).path == CALLBACK
    )  # the sandbox: nothing to visit
    stored = ConnectState.objects.for_org(owner.organization).get(state_hash=hashlib.sha256(state.encode()).hexdigest())
    assert stored.user_id == owner.user.id and stored.used_at is None  # only the state's digest is kept

    response = Client().get(CALLBACK, {"code": query["code"], "state": state})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["kind"], body["name"], body["status"]) == ("short_video", "TikTok DMs", "pending")
    assert body["address"] == "sandbox-" + hashlib.sha256(query["code"].encode()).hexdigest()[:24]
    assert body["credentialKeys"] == ["accessExpiresAt", "accessToken", "refreshExpiresAt", "refreshToken", "scope"]
    assert body["callbackUrl"] == "http://testserver/webhooks/short-video"
    connection = ChannelConnection.objects.for_org(owner.organization).get()
    assert services.connection_credentials(connection)["access_token"].startswith("sandbox-access-")
    assert "sandbox-access-" not in connection.credentials_encrypted  # encrypted at rest

    replay = Client().get(CALLBACK, {"code": "sandbox_other", "state": state})
    assert_error(replay, 400, "CONNECT_STATE_INVALID")
    assert list(ChannelConnection.objects.for_org(owner.organization).values_list("address", flat=True)) == [
        body["address"]
    ]
    listed = api.get("/settings/channel-connections?kind=short_video").json()["items"]
    assert [item["id"] for item in listed] == [body["id"]]


def test_unknown_expired_missing_and_refused_states_are_400_and_connect_nothing(owner, api):
    assert_error(Client().get(CALLBACK, {"code": "x", "state": "unknown"}), 400, "CONNECT_STATE_INVALID")
    assert_error(Client().get(CALLBACK, {"code": "x"}), 400, "CONNECT_STATE_INVALID")
    assert_error(Client().get(CALLBACK, {"code": "x", "state": "s" * 201}), 400, "CONNECT_STATE_INVALID")
    expired, _ = start(api)
    ConnectState.objects.for_org(owner.organization).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert_error(Client().get(CALLBACK, {"code": "x", "state": expired}), 400, "CONNECT_STATE_INVALID")
    denied, _ = start(api)
    refused = Client().get(CALLBACK, {"error": "access_denied", "error_description": "User denied", "state": denied})
    assert_error(refused, 400, "CONNECT_STATE_INVALID")
    assert_error(Client().get(CALLBACK, {"code": "x", "state": denied}), 400, "CONNECT_STATE_INVALID")  # spent
    no_code, _ = start(api)
    assert_error(Client().get(CALLBACK, {"state": no_code}), 400, "CONNECT_STATE_INVALID")
    assert not ChannelConnection.objects.for_org(owner.organization).exists()


def test_a_browser_gets_a_page_for_a_refusal_and_is_redirected_when_connected(owner, api):
    refused = Client().get(CALLBACK, {"code": "x", "state": "unknown"}, HTTP_ACCEPT="text/html")
    assert refused.status_code == 400
    assert refused["Content-Type"].startswith("text/html")
    page = refused.content.decode()
    assert "The connection attempt is unknown, expired or already used." in page
    assert "start connecting the\n      short-video account again" in page
    assert "default-src 'none'" in refused["Content-Security-Policy"]

    state, query = start(api)
    connected = owner.session_client().get(CALLBACK, {"code": query["code"], "state": state}, HTTP_ACCEPT="text/html")
    assert connected.status_code == 302
    assert connected["Location"].endswith("/settings/channels?connected=short_video")
    assert ChannelConnection.objects.for_org(owner.organization).get().kind == "short_video"


def test_a_state_returned_in_another_persons_browser_is_400_and_stays_usable(owner, outsider, api):
    state, query = start(api)
    foreign = outsider.session_client().get(CALLBACK, {"code": query["code"], "state": state})
    assert_error(foreign, 400, "CONNECT_STATE_INVALID")
    assert not ChannelConnection.objects.unscoped().exists()
    assert ConnectState.objects.for_org(owner.organization).get().used_at is None
    response = owner.session_client().get(CALLBACK, {"code": query["code"], "state": state})
    assert response.status_code == 200, response.content
    assert ChannelConnection.objects.for_org(owner.organization).count() == 1
    assert not ChannelConnection.objects.for_org(outsider.organization).exists()


def test_an_account_another_practice_connected_is_refused_and_reconnecting_keeps_one_connection(owner, outsider, api):
    theirs, _ = start(outsider.api_client())
    assert Client().get(CALLBACK, {"code": "sandbox_same", "state": theirs}).status_code == 200
    mine, _ = start(api)
    assert_error(Client().get(CALLBACK, {"code": "sandbox_same", "state": mine}), 400, "ACCOUNT_IN_USE")
    assert not ChannelConnection.objects.for_org(owner.organization).exists()

    state, _ = start(api)
    first = Client().get(CALLBACK, {"code": "sandbox_mine", "state": state}).json()
    assert api.delete(f"/settings/channel-connections/{first['id']}").json()["status"] == "disconnected"
    state, _ = start(api)
    again = Client().get(CALLBACK, {"code": "sandbox_mine", "state": state})  # the same account, connected again
    assert again.status_code == 200, again.content
    assert (again.json()["id"], again.json()["status"]) == (first["id"], "pending")
    assert ChannelConnection.objects.for_org(owner.organization).count() == 1


def test_roles_configuration_and_tenancy_of_the_connection(owner, outsider, member_factory, api, settings):
    front_desk = member_factory(role="front_desk", organization=owner.organization).api_client()
    assert_error(front_desk.post(CONNECT, content_type="application/json"), 403, "PERMISSION_DENIED")
    line = connect(api)
    theirs = outsider.api_client()
    assert_error(theirs.get(f"/settings/channel-connections/{line['id']}"), 404, "NOT_FOUND")
    assert_error(theirs.delete(f"/settings/channel-connections/{line['id']}"), 404, "NOT_FOUND")
    renamed = theirs.patch(
        f"/settings/channel-connections/{line['id']}", json.dumps({"name": "x"}), content_type="application/json"
    )
    assert_error(renamed, 404, "NOT_FOUND")
    assert theirs.get("/settings/channel-connections").json()["items"] == []
    assert ChannelConnection.objects.for_org(owner.organization).get().status == "pending"

    typed = api.post(
        "/settings/channel-connections",
        json.dumps({"kind": "short_video", "name": "typed", "address": "123", "credentials": {}}),
        content_type="application/json",
    )
    assert "kind" in assert_error(typed, 400, "VALIDATION_ERROR")["details"]["fields"]
    tokens = api.patch(
        f"/settings/channel-connections/{line['id']}",
        json.dumps({"credentials": {"accessToken": "typed"}}),
        content_type="application/json",
    )
    assert_error(tokens, 400, "VALIDATION_ERROR")

    settings.SVC_SHORT_VIDEO_CLIENT_KEY = ""
    assert_error(api.post(CONNECT, content_type="application/json"), 409, "SHORT_VIDEO_NOT_CONFIGURED")


# --- the real HTTP client against a local server speaking the Business API ------------------------------------


@pytest.fixture
def tiktok(httpserver, settings):
    """The platform for real: the Business API on a local server (the token endpoint, message send, media)."""
    settings.SVC_OUTBOUND_TRANSPORT = "provider"
    settings.SVC_SHORT_VIDEO_API_URL = httpserver.url_for(API)
    return httpserver


def token_endpoint(httpserver, *, open_id: str = "business-open-id-1", seen: list | None = None):
    def handle(request):
        body = request.get_json()
        if seen is not None:
            seen.append(body)
        if body.get("auth_code") == "refused-code":
            answer = {"code": 40001, "message": "Invalid auth_code", "request_id": "r1", "data": {}}
            return Response(json.dumps(answer), content_type="application/json")
        if body.get("auth_code") == "outage":
            return Response("upstream down", status=502)
        data = {
            "open_id": open_id,
            "scope": "user.info.basic,message.list.read,message.list.send,message.list.manage",
            "access_token": "act.first-access-token",
            "expires_in": 86400,
            "refresh_token": "rft.first-refresh-token",
            "refresh_token_expires_in": 31536000,
            "token_type": "Bearer",
        }
        answer = {"code": 0, "message": "OK", "request_id": "r2", "data": data}
        return Response(json.dumps(answer), content_type="application/json")

    httpserver.expect_request(f"{API}/tt_user/oauth2/token/", method="POST").respond_with_handler(handle)


def test_the_code_is_exchanged_at_the_platforms_token_endpoint(owner, api, tiktok, settings):
    seen = []
    token_endpoint(tiktok, seen=seen)
    state, query = start(api)
    assert query == {
        "client_key": CLIENT_KEY,
        "scope": "user.info.basic,message.list.read,message.list.send,message.list.manage",
        "response_type": "code",
        "redirect_uri": settings.SVC_BASE_URL + CALLBACK,
        "state": state,
    }
    authorize = urlsplit(api.post(CONNECT, content_type="application/json").json()["authorizeUrl"])
    assert f"{authorize.scheme}://{authorize.netloc}{authorize.path}" == "https://www.tiktok.com/v2/auth/authorize/"

    refused = Client().get(CALLBACK, {"code": "refused-code", "state": start(api)[0]})
    assert assert_error(refused, 400, "CONNECT_STATE_INVALID")["details"] == {"providerCode": "40001"}
    outage = Client().get(CALLBACK, {"code": "outage", "state": start(api)[0]})
    assert assert_error(outage, 503, "SHORT_VIDEO_PLATFORM_UNAVAILABLE") and outage["Retry-After"] == "30"
    assert not ChannelConnection.objects.for_org(owner.organization).exists()

    response = Client().get(CALLBACK, {"code": "good-code", "state": state})
    assert response.status_code == 200, response.content
    assert response.json()["address"] == "business-open-id-1"
    connection = ChannelConnection.objects.for_org(owner.organization).get()
    credentials = services.connection_credentials(connection)
    assert (credentials["access_token"], credentials["refresh_token"]) == (
        "act.first-access-token",
        "rft.first-refresh-token",
    )
    assert "first-access-token" not in connection.credentials_encrypted
    assert seen[-1] == {
        "client_id": CLIENT_KEY,
        "client_secret": SECRET,
        "grant_type": "authorization_code",
        "auth_code": "good-code",
        "redirect_uri": query["redirect_uri"],
    }


# --- the webhook: signature, cap, receipts, parking -------------------------------------------------------------


@pytest.mark.parametrize("case", ["missing", "stale", "future", "wrong_secret", "tampered", "no_parts", "garbled"])
def test_signature_refusals_store_nothing(owner, client, line, case):
    body = dm(line["address"])
    raw = json.dumps(body).encode()
    signature = {
        "missing": "",
        "stale": tiktok_signature(raw, int(time.time()) - 301),
        "future": tiktok_signature(raw, int(time.time()) + 301),
        "wrong_secret": tiktok_signature(raw, secret="another-apps-secret"),
        "tampered": tiktok_signature(raw.replace(b"prenotare", b"annullare")),
        "no_parts": "sha256=abc",
        "garbled": "t=notanumber,s=" + "0" * 64,
    }[case]
    response = post(client, body, signature=signature)
    assert_error(response, 401, "CALLBACK_SIGNATURE_INVALID")
    assert nothing_received(owner.organization)


def test_oversized_wrong_type_and_malformed_bodies(owner, client, line):
    huge = json.dumps(dm(line["address"], text="x" * (256 * 1024))).encode()
    assert_error(post(client, raw=huge), 413, "PAYLOAD_TOO_LARGE")
    form = post(client, raw=b"event=im_receive_msg", content_type="application/x-www-form-urlencoded")
    assert form.status_code == 415
    broken = post(client, raw=b"{not json")
    assert assert_error(broken, 400, "VALIDATION_ERROR")["details"]["fields"] == {"body": ["is not JSON"]}
    no_content = dm(line["address"])
    no_content["content"] = "{not json"
    assert assert_error(post(client, no_content), 400, "VALIDATION_ERROR")["details"]["fields"] == {
        "content": ["is not JSON"]
    }
    no_id = dm(line["address"])
    no_id["content"] = json.dumps({**json.loads(no_id["content"]), "message_id": ""})
    assert "content.message_id" in assert_error(post(client, no_id), 400, "VALIDATION_ERROR")["details"]["fields"]
    assert nothing_received(owner.organization)


def test_a_dm_reaches_the_inbox_and_a_redelivery_is_a_duplicate(owner, api, line, patient, deliver):
    response = deliver(dm(line["address"]))
    assert response.status_code == 200, response.content
    assert response.json() == {"stored": 1, "duplicates": 0, "parked": False}
    [conversation] = api.get("/conversations").json()["items"]
    assert conversation["channel"] == "short_video" and conversation["contactAddress"] == USER_ID
    assert conversation["patient"]["id"] == str(patient.id) and conversation["connectionId"] == line["id"]
    [message] = api.get(f"/conversations/{conversation['id']}/messages").json()["items"]
    assert (message["direction"], message["body"], message["channel"]) == (
        "inbound",
        "Buongiorno, vorrei prenotare",
        "short_video",
    )
    assert Conversation.objects.for_org(owner.organization).get().provider_thread_id == THREAD
    assert api.get(f"/settings/channel-connections/{line['id']}").json()["status"] == "active"
    received = Event.unscoped_objects.get(type="message.received")
    assert "prenotare" not in json.dumps(received.data)  # no message text in events

    again = deliver(dm(line["address"]))  # the platform delivers at least once
    assert again.json() == {"stored": 0, "duplicates": 1, "parked": False}
    assert Message.objects.for_org(owner.organization).count() == 1

    # The same person writes again under a new handle: their platform user id finds the conversation.
    deliver(dm(line["address"], message_id="msg-in-2", text="Ci sono ancora posti?", **{"from": "maria.new"}))
    assert Conversation.objects.for_org(owner.organization).count() == 1
    assert Message.objects.for_org(owner.organization).count() == 2


def test_shared_posts_and_other_events(owner, api, line, patient, deliver):
    share = {"type": "share_post", "share_post": {"video_id": "7301", "embed_url": "https://www.tiktok.com/v/7301"}}
    assert deliver(dm(line["address"], message_id="msg-share", **share)).json()["stored"] == 1
    assert Message.objects.for_org(owner.organization).get().body == "https://www.tiktok.com/v/7301"
    for event in ("im_send_msg", "im_mark_read_msg", "im_referral_msg"):
        body = {**dm(line["address"], message_id=f"msg-{event}"), "event": event}
        assert deliver(body).json() == {"stored": 0, "duplicates": 0, "parked": False}
    echo = dm(line["address"], message_id="msg-echo", to_user={"id": USER_ID})  # not addressed to the business
    assert deliver(echo).json()["stored"] == 0
    assert Message.objects.for_org(owner.organization).count() == 1


def test_a_body_for_an_account_not_connected_here_is_parked_for_the_operators(owner, api, line, deliver):
    response = deliver(dm("business-of-nobody-here"))
    assert response.status_code == 200 and response.json() == {"stored": 0, "duplicates": 0, "parked": True}
    parked = ParkedCallback.objects.get()
    assert (parked.kind, parked.organization_id, parked.receiving_address) == (
        "short_video",
        None,
        "business-of-nobody-here",
    )
    assert api.get("/ingest-review").json()["items"] == []  # no route named this practice
    assert not Message.objects.for_org(owner.organization).exists()


def test_a_failed_park_is_503_with_retry_after(owner, client, line):
    from django.db import connection as database

    with database.cursor() as cursor:  # the parked table cannot take the row: the store fails
        cursor.execute("ALTER TABLE conversations_parkedcallback ADD CONSTRAINT no_rows CHECK (false) NOT VALID")
    response = post(client, dm("business-of-nobody-here"))
    assert assert_error(response, 503, "CALLBACK_NOT_STORED") and response["Retry-After"] == "30"
    assert nothing_received(owner.organization)


def test_a_sender_no_patient_stands_for_is_parked_for_the_practice_then_replayed(
    owner, api, line, deliver, django_capture_on_commit_callbacks
):
    response = deliver(dm(line["address"]))
    assert response.json() == {"stored": 1, "duplicates": 0, "parked": False}
    assert api.get("/conversations").json()["items"] == []
    [parked] = api.get("/ingest-review").json()["items"]
    assert (parked["kind"], parked["reason"], parked["receivingAddress"]) == (
        "short_video",
        "sender_not_matched",
        line["address"],
    )
    assert parked["items"][0]["sender"] == USER_ID and parked["items"][0]["body"] == "Buongiorno, vorrei prenotare"
    assert not InboundDelivery.objects.for_org(owner.organization).exists()

    patient = PatientFactory(organization=owner.organization, custom_fields={"shortVideoHandle": HANDLE.upper()})
    with django_capture_on_commit_callbacks(execute=True):
        replayed = api.post(
            f"/ingest-review/{parked['id']}/replay", {"connectionId": line["id"]}, content_type="application/json"
        )
    assert replayed.status_code == 200, replayed.content
    assert replayed.json()["stored"] == 1
    [conversation] = api.get("/conversations").json()["items"]
    assert conversation["patient"]["id"] == str(patient.id)
    assert deliver(dm(line["address"])).json()["duplicates"] == 1  # the receipt is claimed again


def test_an_image_is_stored_with_the_message_and_copied_from_the_platform(
    owner, api, line, patient, deliver, httpserver, settings, tmp_path
):
    settings.DEBUG = True
    settings.SVC_WEBHOOKS_ALLOW_LOOPBACK = True  # the local server is loopback: the SSRF guard's dev allowance
    settings.SVC_SHORT_VIDEO_API_URL = httpserver.url_for(API)
    settings.SVC_MEDIA_STORAGE_ALIAS = "attachments"
    settings.STORAGES = {
        **settings.STORAGES,
        "attachments": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media")},
        },
    }
    token = services.connection_credentials(ChannelConnection.objects.for_org(owner.organization).get())
    lookups = []

    def download(request):
        assert request.headers["Access-Token"] == token["access_token"]
        lookups.append(request.get_json())
        url = httpserver.url_for("/signed/photo.jpg")
        answer = {"code": 0, "message": "OK", "data": {"download_url": url}}
        return Response(json.dumps(answer), content_type="application/json")

    httpserver.expect_request(f"{API}/business/message/media/download/", method="POST").respond_with_handler(download)
    photo = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 8 + b"\xff\xd9"
    httpserver.expect_request("/signed/photo.jpg", method="GET").respond_with_data(photo, content_type="image/jpeg")

    image = {"type": "image", "image": {"media_id": "v0d9e8c7b6a5"}, "message_id": "msg-image"}
    response = deliver(dm(line["address"], **image))
    assert response.json()["stored"] == 1
    attachment = MessageAttachment.objects.for_org(owner.organization).get()
    assert attachment.provider_media_id == "v0d9e8c7b6a5"
    assert (attachment.state, attachment.size, attachment.content_type) == ("stored", len(photo), "image/jpeg")
    assert lookups == [
        {
            "business_id": line["address"],
            "conversation_id": THREAD,
            "message_id": "msg-image",
            "media_id": "v0d9e8c7b6a5",
            "media_type": "IMAGE",
        }
    ]


# --- replies ------------------------------------------------------------------------------------------------------


def the_conversation(owner) -> Conversation:
    return Conversation.objects.for_org(owner.organization).get()


def reply(api, conversation, body, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return api.post(
            f"/conversations/{conversation.id}/messages", json.dumps({"body": body}), content_type="application/json"
        )


def test_a_staff_reply_goes_out_through_the_business_api(
    owner, api, line, patient, deliver, tiktok, django_capture_on_commit_callbacks
):
    deliver(dm(line["address"]))
    conversation = the_conversation(owner)
    token = services.connection_credentials(ChannelConnection.objects.for_org(owner.organization).get())
    sent = []

    def send(request):
        sent.append((request.headers.get("Access-Token"), request.get_json()))
        if request.get_json()["text"]["body"] == "refused":
            answer = {"code": 40105, "message": "Access token is invalid", "data": {}}
        else:
            answer = {"code": 0, "message": "OK", "request_id": "r3", "data": {"message": {"message_id": "msg-out-1"}}}
        return Response(json.dumps(answer), content_type="application/json")

    tiktok.expect_request(f"{API}/business/message/send/", method="POST").respond_with_handler(send)
    response = reply(api, conversation, "Certo! Domani alle 10?", django_capture_on_commit_callbacks)
    assert response.status_code == 201, response.content
    message = Message.objects.for_org(owner.organization).get(id=response.json()["id"])
    assert (message.status, message.provider_message_id, message.sandbox) == ("sent", "msg-out-1", False)
    assert sent == [
        (
            token["access_token"],
            {
                "business_id": line["address"],
                "recipient_type": "CONVERSATION",
                "recipient": THREAD,
                "message_type": "TEXT",
                "text": {"body": "Certo! Domani alle 10?"},
            },
        )
    ]
    assert Event.unscoped_objects.filter(type="message.sent", subject_id=str(message.id)).exists()

    # The platform refuses the token (a non-zero code with HTTP 200): the message fails, the connection is unhealthy.
    refused = reply(api, conversation, "refused", django_capture_on_commit_callbacks)
    message = Message.objects.for_org(owner.organization).get(id=refused.json()["id"])
    assert (message.status, message.error_code) == ("failed", "40105")
    assert ChannelConnection.objects.for_org(owner.organization).get().health == "unhealthy"


def test_a_token_due_is_refreshed_before_the_send(
    owner, api, line, patient, deliver, tiktok, django_capture_on_commit_callbacks
):
    deliver(dm(line["address"]))
    connection = ChannelConnection.objects.for_org(owner.organization).get()
    credentials = services.connection_credentials(connection)
    services._store_credentials(connection, {**credentials, "access_expires_at": str(int(time.time()) + 60)})
    connection.save()
    refreshed, sent = [], []

    def refresh(request):
        refreshed.append(request.get_json())
        data = {"open_id": line["address"], "access_token": "act.second", "expires_in": 86400,
                "refresh_token": "rft.second", "refresh_token_expires_in": 31536000}  # fmt: skip
        return Response(json.dumps({"code": 0, "message": "OK", "data": data}), content_type="application/json")

    def send(request):
        sent.append(request.headers.get("Access-Token"))
        answer = {"code": 0, "message": "OK", "data": {"message": {"message_id": f"msg-out-{len(sent)}"}}}
        return Response(json.dumps(answer), content_type="application/json")

    tiktok.expect_request(f"{API}/tt_user/oauth2/refresh_token/", method="POST").respond_with_handler(refresh)
    tiktok.expect_request(f"{API}/business/message/send/", method="POST").respond_with_handler(send)
    conversation = the_conversation(owner)
    assert reply(api, conversation, "Prima risposta", django_capture_on_commit_callbacks).status_code == 201
    assert reply(api, conversation, "Seconda risposta", django_capture_on_commit_callbacks).status_code == 201
    assert refreshed == [
        {
            "client_id": CLIENT_KEY,
            "client_secret": SECRET,
            "grant_type": "refresh_token",
            "refresh_token": credentials["refresh_token"],
        }
    ]
    assert sent == ["act.second", "act.second"]  # refreshed once; the new pair is stored
    stored = services.connection_credentials(ChannelConnection.objects.for_org(owner.organization).get())
    assert (stored["access_token"], stored["refresh_token"]) == ("act.second", "rft.second")
    assert set(
        Message.objects.for_org(owner.organization).filter(direction="outbound").values_list("status", flat=True)
    ) == {"sent"}


def test_replies_only_within_48_hours_and_never_a_first_message(owner, api, line, patient, deliver):
    deliver(dm(line["address"]))
    conversation = the_conversation(owner)
    Conversation.objects.for_org(owner.organization).filter(id=conversation.id).update(
        last_inbound_at=timezone.now() - timedelta(hours=49)
    )
    late = api.post(
        f"/conversations/{conversation.id}/messages", json.dumps({"body": "Ci sei?"}), content_type="application/json"
    )
    assert_error(late, 409, "OUTSIDE_REPLY_WINDOW")
    other = PatientFactory(organization=owner.organization, phone_mobile="+393330000000")
    first = api.post(
        "/conversations",
        json.dumps({"patientId": str(other.id), "connectionId": line["id"], "body": "Salve"}),
        content_type="application/json",
    )
    assert_error(first, 409, "NO_ADDRESS")
    assert not Message.objects.for_org(owner.organization).filter(direction="outbound").exists()


def test_another_practice_cannot_read_or_answer_the_conversation(owner, outsider, api, line, patient, deliver):
    deliver(dm(line["address"]))
    conversation = the_conversation(owner)
    theirs = outsider.api_client()
    assert_error(theirs.get(f"/conversations/{conversation.id}"), 404, "NOT_FOUND")
    assert_error(theirs.get(f"/conversations/{conversation.id}/messages"), 404, "NOT_FOUND")
    answered = theirs.post(
        f"/conversations/{conversation.id}/messages", json.dumps({"body": "x"}), content_type="application/json"
    )
    assert_error(answered, 404, "NOT_FOUND")
    assert theirs.get("/conversations").json()["items"] == []
    assert Message.objects.for_org(owner.organization).count() == 1


def test_the_openapi_document_describes_the_routes(client):
    schema = client.get("/openapi.json").json()
    webhook = schema["paths"]["/webhooks/short-video"]["post"]
    assert "TikTok-Signature" in webhook["description"] and "413" in webhook["responses"]
    assert "401" in webhook["responses"] and webhook["tags"] == ["inbox"]
    callback = schema["paths"]["/webhooks/short-video/oauth/callback"]["get"]
    assert callback["tags"] == ["Channel connections"] and "400" in callback["responses"]
    assert schema["paths"]["/settings/channel-connections/short-video/connect"]["post"]["tags"] == [
        "Channel connections"
    ]


@pytest.mark.django_db(transaction=True)
def test_simulate_inbound_signs_a_dm_as_the_platform(live_server):
    owner = make_member()
    line = connect(owner.api_client())
    patient = PatientFactory(organization=owner.organization, custom_fields={"shortVideoHandle": "@giulia.b"})
    call_command(
        "simulate_inbound",
        "short_video",
        connection=line["id"],
        sender="@giulia.b",
        text="Ciao!",
        server=live_server.url,
    )
    message = Message.objects.for_org(owner.organization).get()
    assert message.body == "Ciao!" and message.conversation.patient_id == patient.id
