"""Fixtures of the AI assist tests: a conversation that came in by SMS (through the real callback route) and a real
local HTTP server speaking the OpenAI chat-completions API, which records what it was asked."""

import json

import pytest
from werkzeug import Response

from tests.conversations.conftest import connection, inbound  # noqa: F401
from tests.conversations.test_inbound_sms import sms
from tests.factories import PatientFactory

PROVIDER_KEY = "sk-test-assist-key"
MODEL = "small-chat-model"
PATIENT_PHONE = "+393331234567"


class ChatCompletionsServer:
    """POST /v1/chat/completions as an OpenAI-compatible API answers it: bearer key checked, model and messages
    required; answers `reply` (or, with `status`, an error of that status). Every request body is kept."""

    def __init__(self, httpserver):
        self.httpserver = httpserver
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.reply = "Of course, we can move it. Would [day and time] suit you?"
        self.status = 200
        httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(self.handle)

    @property
    def base_url(self) -> str:
        return self.httpserver.url_for("/v1")

    def handle(self, request):
        self.headers.append(dict(request.headers))
        if request.headers.get("Authorization") != f"Bearer {PROVIDER_KEY}":
            return self.error(401, "invalid_api_key", "Incorrect API key provided.")
        body = json.loads(request.get_data())
        self.requests.append(body)
        if body.get("model") != MODEL or not isinstance(body.get("messages"), list):
            return self.error(400, "invalid_request_error", "model and messages are required")
        if self.status != 200:
            return self.error(self.status, "server_error", "The server had an error.")
        completion = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1700000000,
            "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": self.reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62},
        }
        return Response(json.dumps(completion), content_type="application/json")

    @staticmethod
    def error(status: int, code: str, message: str):
        body = {"error": {"message": message, "type": code, "code": code}}
        return Response(json.dumps(body), status=status, content_type="application/json")


@pytest.fixture
def chat_server(httpserver, settings) -> ChatCompletionsServer:
    """The provider, configured: URL, key and model set."""
    server = ChatCompletionsServer(httpserver)
    settings.SVC_AI_ASSIST_PROVIDER_URL = server.base_url
    settings.SVC_AI_ASSIST_PROVIDER_KEY = PROVIDER_KEY
    settings.SVC_AI_ASSIST_PROVIDER_MODEL = MODEL
    return server


@pytest.fixture
def conversation(owner, inbound) -> dict:  # noqa: F811 (the imported fixture)
    """A conversation of the owner's practice with one inbound SMS from Ada Lovelace. Its JSON."""
    PatientFactory(organization=owner.organization, phone_mobile=PATIENT_PHONE, first_name="Ada", last_name="Lovelace")
    response = inbound(sms(1, text="Buongiorno, posso spostare la pulizia di martedì?"))
    assert response.status_code == 200, response.content
    (item,) = owner.api_client().get("/conversations").json()["items"]
    return item
