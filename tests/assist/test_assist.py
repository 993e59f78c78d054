"""AI assist through HTTP against a real local chat-completions server: off by default (409), what it asks the
provider (no names or contact details), the per-practice bucket (429 RATE_LIMITED with Retry-After), provider
failures (503), roles (inbox:work) and tenancy (404)."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.conversations.public import Message
from tests.assist.conftest import PATIENT_PHONE, PROVIDER_KEY
from tests.helpers import assert_error

SUGGEST = "/conversations/{}/assist/suggest-reply"
SUMMARIZE = "/conversations/{}/assist/summarize"


def post(client, path, data=None):
    if data is None:
        return client.generic("POST", path)  # no body at all
    return client.post(path, json.dumps(data), content_type="application/json")


def add_message(owner, conversation, direction: str, body: str, minutes_later: int, **fields) -> None:
    """Another message in the conversation, written straight to the table (sending is the inbox's own tests)."""
    first = Message.objects.for_org(owner.organization).filter(conversation_id=conversation["id"]).first()
    Message.objects.create(
        organization=owner.organization,
        conversation_id=conversation["id"],
        direction=direction,
        channel="sms",
        status="delivered" if direction == "outbound" else "received",
        body=body,
        occurred_at=first.occurred_at + timedelta(minutes=minutes_later),
        **fields,
    )


# --- off by default -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [SUGGEST, SUMMARIZE])
def test_without_a_provider_assist_is_409_not_configured(api, conversation, path, settings):
    assert settings.SVC_AI_ASSIST_PROVIDER_URL == "" and settings.SVC_AI_ASSIST_PROVIDER_MODEL == ""
    assert_error(post(api, path.format(conversation["id"])), 409, "AI_ASSIST_NOT_CONFIGURED")


def test_a_partial_configuration_is_still_off(api, conversation, chat_server, settings):
    settings.SVC_AI_ASSIST_PROVIDER_KEY = ""
    assert_error(post(api, SUMMARIZE.format(conversation["id"])), 409, "AI_ASSIST_NOT_CONFIGURED")
    assert chat_server.requests == []


# --- configured -----------------------------------------------------------------------------------------------------


def test_suggest_reply_asks_the_provider_with_the_conversation_and_no_identities(owner, api, conversation, chat_server):
    add_message(owner, conversation, "outbound", "Certo, quale giorno preferisce?", 5)
    add_message(owner, conversation, "outbound", "Promo sbiancamento -20%!", 6, purpose="marketing")
    add_message(owner, conversation, "inbound", "Giovedì mattina, grazie", 10)

    response = post(api, SUGGEST.format(conversation["id"]), {"instructions": "confirm Thursday 9:00"})
    assert response.status_code == 200, response.content
    assert response.json() == {"suggestion": chat_server.reply, "messagesRead": 3}

    (asked,) = chat_server.requests
    assert asked["model"] == "small-chat-model" and asked["max_tokens"] == 400
    system, user = asked["messages"]
    assert system["role"] == "system" and "dental practice" in system["content"]
    assert user["role"] == "user"
    assert user["content"] == (
        "Channel: SMS\n\n"
        "Patient: Buongiorno, posso spostare la pulizia di martedì?\n\n"
        "Practice: Certo, quale giorno preferisce?\n\n"
        "Patient: Giovedì mattina, grazie\n\n"
        "The staff member asks for this reply: confirm Thursday 9:00"
    )
    for secret in ("Ada", "Lovelace", PATIENT_PHONE, "Promo"):
        assert secret not in json.dumps(asked)
    assert chat_server.headers[0]["Authorization"] == f"Bearer {PROVIDER_KEY}"
    assert not Message.objects.for_org(owner.organization).filter(body=chat_server.reply).exists()  # nothing sent


def test_suggest_reply_takes_no_body_or_an_empty_one(api, conversation, chat_server):
    assert post(api, SUGGEST.format(conversation["id"])).status_code == 200
    assert post(api, SUGGEST.format(conversation["id"]), {}).status_code == 200
    assert all("asks for this reply" not in r["messages"][1]["content"] for r in chat_server.requests)


@pytest.mark.parametrize(
    "body",
    [{"instructions": 5}, {"instructions": "x" * 501}, {"tone": "formal"}, {"instructions": None}],
)
def test_bad_suggest_bodies_are_400(api, conversation, chat_server, body):
    assert_error(post(api, SUGGEST.format(conversation["id"]), body), 400, "VALIDATION_ERROR")
    assert chat_server.requests == []


def test_summarize(owner, api, conversation, chat_server):
    chat_server.reply = "- Wants to move Tuesday's cleaning\n- Nothing agreed yet"
    response = post(api, SUMMARIZE.format(conversation["id"]))
    assert response.status_code == 200, response.content
    assert response.json() == {"summary": chat_server.reply, "messagesRead": 1}
    (asked,) = chat_server.requests
    assert "Summarize" in asked["messages"][0]["content"] and asked["max_tokens"] == 300
    assert asked["messages"][1]["content"].endswith("Patient: Buongiorno, posso spostare la pulizia di martedì?")


def test_only_the_latest_thirty_messages_are_read_each_cut_to_size(owner, api, conversation, chat_server):
    for n in range(35):
        add_message(owner, conversation, "inbound", f"message {n} " + "y" * 2100, n + 1)
    body = post(api, SUMMARIZE.format(conversation["id"])).json()
    assert body["messagesRead"] == 30
    content = chat_server.requests[0]["messages"][1]["content"]
    assert "message 4 " not in content and "message 5 " in content and "message 34 " in content
    assert content.count(" […]") == 30


def test_a_conversation_without_text_is_409(owner, api, conversation, chat_server):
    Message.objects.for_org(owner.organization).filter(conversation_id=conversation["id"]).update(body="")
    assert_error(post(api, SUMMARIZE.format(conversation["id"])), 409, "AI_ASSIST_NOTHING_TO_READ")
    assert chat_server.requests == []


@pytest.mark.parametrize("status", [500, 429, 401])
def test_a_failing_provider_is_503_with_retry_after(api, conversation, chat_server, settings, status):
    if status == 401:
        settings.SVC_AI_ASSIST_PROVIDER_KEY = "sk-wrong"
    else:
        chat_server.status = status
    response = post(api, SUGGEST.format(conversation["id"]))
    assert_error(response, 503, "AI_ASSIST_UNAVAILABLE")
    assert response["Retry-After"] == "10"


def test_an_unreadable_or_empty_answer_is_503(api, conversation, chat_server):
    chat_server.reply = "   "
    assert_error(post(api, SUGGEST.format(conversation["id"])), 503, "AI_ASSIST_UNAVAILABLE")


def test_an_unreachable_provider_is_503(api, conversation, chat_server, settings):
    from tests.live import free_port

    settings.SVC_AI_ASSIST_PROVIDER_URL = f"http://127.0.0.1:{free_port()}/v1"
    assert_error(post(api, SUMMARIZE.format(conversation["id"])), 503, "AI_ASSIST_UNAVAILABLE")


# --- the bucket -----------------------------------------------------------------------------------------------------


def test_the_bucket_is_the_specs(settings):
    assert settings.SVC_AI_ASSIST_BUCKET == (60, 0.1)  # 60 burst, 6 per minute


def test_the_practice_bucket_refuses_with_429_rate_limited_and_retry_after(
    owner, api, member_factory, outsider, conversation, chat_server, settings
):
    settings.SVC_AI_ASSIST_BUCKET = (2, 6 / 60)
    colleague = member_factory(role="front_desk", organization=owner.organization).api_client()
    assert post(api, SUGGEST.format(conversation["id"])).status_code == 200
    assert post(colleague, SUMMARIZE.format(conversation["id"])).status_code == 200
    refused = post(api, SUGGEST.format(conversation["id"]))
    body = assert_error(refused, 429, "RATE_LIMITED")
    assert 1 <= int(refused["Retry-After"]) <= 10 and body["details"]["retryAfter"] == int(refused["Retry-After"])
    # The whole practice shares it (any member, either route)…
    assert_error(post(colleague, SUMMARIZE.format(conversation["id"])), 429, "RATE_LIMITED")
    assert len(chat_server.requests) == 2
    # …and another practice has its own.
    theirs = conversation_of_outsider(outsider)
    assert post(outsider.api_client(), SUMMARIZE.format(theirs)).status_code == 200


def conversation_of_outsider(outsider) -> str:
    """A conversation of the outsider's practice, written straight to the tables (its own SMS connection)."""
    from apps.conversations.public import ChannelConnection, Conversation
    from tests.conversations.conftest import AUTH_TOKEN, connect
    from tests.factories import PatientFactory

    credentials = {"accountSid": "AC" + "1" * 32, "authToken": AUTH_TOKEN}
    connection = connect(outsider.api_client(), "sms", "+390299999999", credentials)
    patient = PatientFactory(organization=outsider.organization)
    conversation = Conversation.objects.create(
        organization=outsider.organization,
        patient=patient,
        connection=ChannelConnection.objects.for_org(outsider.organization).get(id=connection["id"]),
        channel="sms",
        contact_address="+393330000099",
        last_message_at=timezone.now(),
    )
    Message.objects.create(
        organization=outsider.organization,
        conversation=conversation,
        direction="inbound",
        channel="sms",
        status="received",
        body="Salve",
        occurred_at=timezone.now(),
    )
    return str(conversation.id)


def test_refusals_before_the_bucket_take_no_token(owner, api, outsider, conversation, chat_server, settings):
    settings.SVC_AI_ASSIST_BUCKET = (1, 6 / 60)
    theirs = conversation_of_outsider(outsider)
    assert_error(post(api, SUGGEST.format(theirs)), 404, "NOT_FOUND")
    assert_error(post(api, SUGGEST.format(conversation["id"]), {"tone": 1}), 400, "VALIDATION_ERROR")
    assert post(api, SUGGEST.format(conversation["id"])).status_code == 200  # the one token was still there


# --- roles and tenancy ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["analyst", "dentist", "hygienist", "nurse"])
@pytest.mark.parametrize("path", [SUGGEST, SUMMARIZE])
def test_roles_without_inbox_work_are_403(owner, member_factory, conversation, chat_server, role, path):
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert_error(post(client, path.format(conversation["id"])), 403, "PERMISSION_DENIED")
    assert chat_server.requests == []


@pytest.mark.parametrize("role", ["manager", "front_desk", "telesales"])
def test_roles_that_work_the_inbox_may_use_it(owner, member_factory, conversation, chat_server, role):
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert post(client, SUMMARIZE.format(conversation["id"])).status_code == 200


@pytest.mark.parametrize("path", [SUGGEST, SUMMARIZE])
def test_another_practices_or_an_unknown_conversation_is_404(owner, outsider, conversation, chat_server, path):
    import uuid

    stranger = outsider.api_client()
    assert_error(post(stranger, path.format(conversation["id"])), 404, "NOT_FOUND")
    assert_error(post(stranger, path.format(uuid.uuid4())), 404, "NOT_FOUND")
    assert_error(post(stranger, path.format("not-a-uuid")), 400, "VALIDATION_ERROR")
    assert chat_server.requests == []


def test_an_oauth_token_needs_a_conversations_write_scope(owner, conversation, chat_server):
    from tests.oauth.tokens import bearer, mint

    raw, _ = mint(owner, "conversations.read")
    assert_error(post(bearer(raw), SUMMARIZE.format(conversation["id"])), 403, "INSUFFICIENT_SCOPE")
    raw, _ = mint(owner, "conversations.write")
    assert post(bearer(raw), SUMMARIZE.format(conversation["id"])).status_code == 200


def test_get_is_405(api, conversation):
    assert_error(api.get(SUMMARIZE.format(conversation["id"])), 405, "METHOD_NOT_ALLOWED")
