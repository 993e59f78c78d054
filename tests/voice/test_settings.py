"""GET/PATCH /settings/ai-voice: off by default, switched on only where a provider is configured, validation, roles
(settings:read / settings:update), OAuth scopes (settings area) and one row per practice."""

import pytest

from apps.voice.models import VoiceSettings
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint
from tests.voice.conftest import SETTINGS, enable, patch_json

pytestmark = pytest.mark.django_db

DEFAULTS = {
    "enabled": False,
    "autoTranscribe": False,
    "autoSummarize": False,
    "language": "",
    "transcriptionAvailable": False,
    "summaryAvailable": False,
}


def without_time(body: dict) -> dict:
    assert body.pop("updatedAt").endswith("Z")
    return body


def test_off_by_default_and_no_provider_on_this_service(api, settings):
    assert settings.SVC_AI_VOICE_TRANSPORT == "provider" and settings.SVC_AI_VOICE_TRANSCRIBE_URL == ""
    response = api.get(SETTINGS)
    assert response.status_code == 200, response.content
    assert without_time(response.json()) == DEFAULTS


def test_switching_on_without_a_provider_is_409_and_changes_nothing(owner, api):
    body = assert_error(
        patch_json(api, SETTINGS, {"enabled": True, "autoTranscribe": True}), 409, "AI_VOICE_NOT_CONFIGURED"
    )
    assert body["details"] == {"service": "transcription"}
    assert without_time(api.get(SETTINGS).json()) == DEFAULTS
    # Switching the options while off is allowed (nothing runs while enabled is false).
    assert patch_json(api, SETTINGS, {"language": "it"}).json()["language"] == "it"


def test_a_partial_transcription_configuration_is_still_off(api, providers, settings):
    settings.SVC_AI_VOICE_TRANSCRIBE_MODEL = ""
    assert api.get(SETTINGS).json()["transcriptionAvailable"] is False
    assert_error(patch_json(api, SETTINGS, {"enabled": True}), 409, "AI_VOICE_NOT_CONFIGURED")


def test_switch_on_set_options_and_off(owner, api, providers):
    assert api.get(SETTINGS).json()["transcriptionAvailable"] is True
    body = enable(api, autoTranscribe=True, autoSummarize=True, language="it")
    assert without_time(body) == {
        "enabled": True,
        "autoTranscribe": True,
        "autoSummarize": True,
        "language": "it",
        "transcriptionAvailable": True,
        "summaryAvailable": True,
    }
    row = VoiceSettings.objects.for_org(owner.organization).get()
    assert row.updated_by_id == owner.user.id
    off = patch_json(api, SETTINGS, {"enabled": False, "language": ""}).json()
    assert (off["enabled"], off["autoTranscribe"], off["language"]) == (False, True, "")
    assert VoiceSettings.objects.for_org(owner.organization).count() == 1


def test_the_sandbox_counts_as_a_provider(api, settings):
    settings.SVC_AI_VOICE_TRANSPORT = "sandbox"
    body = enable(api)
    assert (body["transcriptionAvailable"], body["summaryAvailable"]) == (True, True)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"enabled": "yes"}, "enabled"),
        ({"enabled": 1}, "enabled"),
        ({"autoTranscribe": None}, "autoTranscribe"),
        ({"language": "ITA"}, "language"),
        ({"language": "IT"}, "language"),
        ({"language": "i1"}, "language"),
        ({"language": 12}, "language"),
        ({"transcribeEverything": True}, "transcribeEverything"),
    ],
)
def test_bad_bodies_are_400(owner, api, providers, body, field):
    refused = assert_error(patch_json(api, SETTINGS, body), 400, "VALIDATION_ERROR")
    assert field in refused["details"]["fields"]
    assert without_time(api.get(SETTINGS).json())["enabled"] is False


def test_an_empty_or_missing_body_is_400(api):
    assert_error(patch_json(api, SETTINGS, {}), 400, "VALIDATION_ERROR")
    assert_error(api.patch(SETTINGS), 400, "VALIDATION_ERROR")


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst"])
def test_members_who_read_settings_see_it_but_cannot_change_it(owner, member_factory, providers, role):
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert client.get(SETTINGS).status_code == 200
    assert_error(patch_json(client, SETTINGS, {"enabled": True}), 403, "PERMISSION_DENIED")
    assert not VoiceSettings.objects.for_org(owner.organization).filter(enabled=True).exists()


@pytest.mark.parametrize("role", ["dentist", "hygienist", "nurse"])
def test_clinical_roles_have_no_settings_access(owner, member_factory, role):
    client = member_factory(role=role, organization=owner.organization).api_client()
    assert_error(client.get(SETTINGS), 403, "PERMISSION_DENIED")


def test_a_manager_may_change_it(owner, member_factory, providers):
    manager = member_factory(role="manager", organization=owner.organization).api_client()
    assert enable(manager)["enabled"] is True


def test_oauth_tokens_need_the_settings_scopes(owner, providers):
    raw, _ = mint(owner, "settings.read")
    assert bearer(raw).get(SETTINGS).status_code == 200
    assert_error(patch_json(bearer(raw), SETTINGS, {"enabled": True}), 403, "INSUFFICIENT_SCOPE")
    raw, _ = mint(owner, "dialer")
    assert_error(bearer(raw).get(SETTINGS), 403, "INSUFFICIENT_SCOPE")
    raw, _ = mint(owner, "settings.write")
    assert enable(bearer(raw))["enabled"] is True


def test_each_practice_has_its_own_switch(owner, outsider, api, providers):
    enable(outsider.api_client(), autoTranscribe=True)
    assert without_time(api.get(SETTINGS).json())["enabled"] is False
    assert not VoiceSettings.objects.for_org(owner.organization).filter(enabled=True).exists()
    # An X-Organization-ID of a practice the caller does not belong to is refused, never another's settings.
    response = owner.api_client(organization_id=outsider.organization.id).get(SETTINGS)
    assert response.status_code == 403, response.content


def test_other_methods_are_405(api):
    assert_error(api.post(SETTINGS), 405, "METHOD_NOT_ALLOWED")
    assert_error(api.delete(SETTINGS), 405, "METHOD_NOT_ALLOWED")
