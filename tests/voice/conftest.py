"""Fixtures of the AI Voice tests: calls made through the dialer's real callback route (its local Telnyx server
serves the recordings, which the dialer copies into this test's media folder), and one real local HTTP server
speaking both provider APIs: the OpenAI-compatible audio transcription endpoint (multipart upload, verbose_json
answer) and, through the AI assist tests' fake, chat completions. Both record what they were asked."""

import json
import logging

import pytest
from werkzeug import Response

from apps.dialer.public import Call, Recording
from tests.assist.conftest import MODEL as CHAT_MODEL
from tests.assist.conftest import PROVIDER_KEY as CHAT_KEY
from tests.assist.conftest import ChatCompletionsServer
from tests.dialer.conftest import (  # noqa: F401 (fixtures)
    AUDIO,
    PATIENT_NUMBER,
    InboundCall,
    account,
    deliver,
    line,
    media,
    number,
    patch_json,
    post_json,
    telnyx,
)
from tests.factories import PatientFactory

TRANSCRIBE_KEY = "sk-test-voice-key"
TRANSCRIBE_MODEL = "small-transcribe-model"
SETTINGS = "/settings/ai-voice"
TRANSCRIPT = "/calls/{}/transcript"
SUMMARY = "/calls/{}/summary"

SEGMENTS = [
    {"id": 0, "seek": 0, "start": 0.0, "end": 3.5, "text": " Buongiorno, studio dentistico.", "speaker": "A"},
    {"id": 1, "seek": 0, "start": 3.5, "end": 9.25, "text": " Vorrei spostare la pulizia di martedì.", "speaker": "B"},
    {"id": 2, "seek": 0, "start": 9.25, "end": 12.0, "text": " Certo, la richiamiamo oggi.", "speaker": "A"},
]
SUMMARY_ANSWER = {
    "summary": "La paziente vuole spostare la pulizia di martedì.",
    "actionItems": ["Richiamare la paziente oggi per un nuovo orario"],
}


class TranscriptionServer:
    """POST /v1/audio/transcriptions as the OpenAI audio API answers it: bearer key checked, a multipart `file` and
    `model` required; answers `answer` (verbose_json), or with `status` an error. Every request is kept."""

    def __init__(self, httpserver):
        self.requests: list[dict] = []
        self.status = 200
        self.raw_answer: bytes | None = None
        self.answer = {
            "task": "transcribe",
            "language": "italian",
            "duration": 12.0,
            "text": "".join(segment["text"] for segment in SEGMENTS),
            "segments": SEGMENTS,
        }
        httpserver.expect_request("/v1/audio/transcriptions", method="POST").respond_with_handler(self.handle)

    def handle(self, request):
        upload = request.files.get("file")
        self.requests.append(
            {
                "authorization": request.headers.get("Authorization"),
                "content_type": request.headers.get("Content-Type", "").split(";")[0],
                "form": dict(request.form),
                "filename": upload.filename if upload else None,
                "file_type": upload.mimetype if upload else None,
                "audio": upload.read() if upload else None,
            }
        )
        if request.headers.get("Authorization") != f"Bearer {TRANSCRIBE_KEY}":
            return self.error(401, "invalid_api_key")
        if upload is None or request.form.get("model") != TRANSCRIBE_MODEL:
            return self.error(400, "invalid_request_error")
        if self.status != 200:
            return self.error(self.status, "server_error")
        body = self.raw_answer if self.raw_answer is not None else json.dumps(self.answer).encode()
        return Response(body, content_type="application/json")

    @staticmethod
    def error(status: int, code: str):
        body = {"error": {"message": "The server had an error with Vorrei spostare.", "type": code, "code": code}}
        return Response(json.dumps(body), status=status, content_type="application/json")


class Providers:
    def __init__(self, transcription: TranscriptionServer, chat: ChatCompletionsServer):
        self.transcription, self.chat = transcription, chat


@pytest.fixture
def providers(httpserver, settings) -> Providers:
    """Both providers configured against the local server; the chat answers the summary JSON."""
    transcription = TranscriptionServer(httpserver)
    chat = ChatCompletionsServer(httpserver)
    chat.reply = json.dumps(SUMMARY_ANSWER, ensure_ascii=False)
    settings.SVC_AI_VOICE_TRANSPORT = "provider"
    settings.SVC_AI_VOICE_TRANSCRIBE_URL = httpserver.url_for("/v1")
    settings.SVC_AI_VOICE_TRANSCRIBE_KEY = TRANSCRIBE_KEY
    settings.SVC_AI_VOICE_TRANSCRIBE_MODEL = TRANSCRIBE_MODEL
    settings.SVC_AI_ASSIST_PROVIDER_URL = chat.base_url
    settings.SVC_AI_ASSIST_PROVIDER_KEY = CHAT_KEY
    settings.SVC_AI_ASSIST_PROVIDER_MODEL = CHAT_MODEL
    return Providers(transcription, chat)


def enable(client, **options) -> dict:
    response = patch_json(client, SETTINGS, {"enabled": True, **options})
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def patient(owner):
    return PatientFactory(organization=owner.organization, phone_mobile=PATIENT_NUMBER, first_name="Ada")


@pytest.fixture
def make_call(owner, number, deliver, telnyx, patient):  # noqa: F811 (the imported fixtures)
    """A finished inbound call from the patient (or another caller), recorded (or a voicemail, or with no
    recording), its recording stored by the dialer. Returns the Call."""
    made = []

    def make(*, voicemail: bool = False, recorded: bool = True, audio: bytes = AUDIO, caller=PATIENT_NUMBER) -> Call:
        call = InboundCall(caller=caller)
        path = f"/files/rec-{len(made)}"
        telnyx.files[path] = audio
        events = [call.initiated(), call.answered(), call.hangup()]
        if recorded:
            events.append(call.recording(telnyx.url(path), recording_id=f"rec-{len(made)}", voicemail=voicemail))
        deliver(*events)
        row = Call.objects.for_org(owner.organization).get(provider_call_leg_id=call.leg)
        made.append(row)
        return row

    return make


@pytest.fixture
def capture(django_capture_on_commit_callbacks):
    """Run the request, keep what it queued after the commit (execute=False: the test calls the task itself)."""
    return django_capture_on_commit_callbacks


@pytest.fixture
def recorded_call(make_call) -> Call:
    call = make_call()
    assert Recording.objects.for_org(call.organization_id).get(call=call).state == "stored"
    return call


class Captured(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def logs():
    """Every log record of the run, whatever pytest's logging plugin does (the suite may run with -p no:logging)."""
    handler = Captured()
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield handler
    root.removeHandler(handler)
    root.setLevel(previous)
