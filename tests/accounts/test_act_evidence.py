"""Fresh re-authentication: POST /user/reauthenticate and the reusable guard (WITH_ACT_EVIDENCE), exercised on a
view defined here and mounted next to the real routes."""

from datetime import timedelta

import pytest
from django.core import signing
from django.test import Client
from django.urls import include, path
from rest_framework.response import Response

from apps.accounts.act_evidence import HEADER, WITH_ACT_EVIDENCE
from apps.core.views import BaseApiView
from tests.accounts.two_factor_support import (
    REAUTHENTICATE,
    clock,  # noqa: F401  (fixture)
    now,
    parse_time,
    post,
)
from tests.factories import DEFAULT_PASSWORD
from tests.helpers import assert_error

ACT = "/test-only/sign-note"
PRESCRIBE = "/test-only/sign-prescription"
EVIDENCE = "HTTP_X_SERVICE_ACT_EVIDENCE"


class SignNoteView(BaseApiView):
    """Stands in for a clinical act (signing a note): the usual access check, then fresh evidence."""

    permission = "member:read"
    scope_area = "settings"
    permission_classes = WITH_ACT_EVIDENCE

    def post(self, request):
        return Response({"signedBy": str(request.user.id)})


class SignPrescriptionView(SignNoteView):
    permission = "patient:update"


urlpatterns = [
    path("", include("config.urls")),
    path(ACT.lstrip("/"), SignNoteView.as_view()),
    path(PRESCRIBE.lstrip("/"), SignPrescriptionView.as_view()),
]

pytestmark = [pytest.mark.urls(__name__), pytest.mark.usefixtures("clock")]


def evidence(client: Client) -> str:
    response = post(client, REAUTHENTICATE, {"password": DEFAULT_PASSWORD})
    assert response.status_code == 200, response.content
    return response.json()["token"]


def act(client: Client, token: str | None = None):
    extra = {EVIDENCE: token} if token is not None else {}
    return post(client, ACT, {"noteId": "n-1"}, **extra)


def test_the_header_name_is_the_contract_one():
    assert HEADER == "X-Service-Act-Evidence"


def test_reauthenticate_answers_a_token_valid_five_minutes(owner):
    response = post(owner.session_client(), REAUTHENTICATE, {"password": DEFAULT_PASSWORD})

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"token", "expiresAt"}
    assert parse_time(body["expiresAt"]) == now() + timedelta(minutes=5)
    assert DEFAULT_PASSWORD not in body["token"]


def test_reauthenticate_checks_the_password(owner):
    client = owner.session_client()

    wrong = post(client, REAUTHENTICATE, {"password": DEFAULT_PASSWORD + "!"})
    missing = post(client, REAUTHENTICATE, {})

    assert_error(wrong, 400, "INVALID_PASSWORD")
    assert list(assert_error(missing, 400, "VALIDATION_ERROR")["details"]["fields"]) == ["password"]


def test_reauthenticate_needs_a_session(db):
    assert_error(post(Client(), REAUTHENTICATE, {"password": DEFAULT_PASSWORD}), 401, "UNAUTHENTICATED")


def test_api_keys_cannot_obtain_evidence(owner):
    response = post(owner.api_client(), REAUTHENTICATE, {"password": DEFAULT_PASSWORD})

    assert_error(response, 403, "BROWSER_SESSION_REQUIRED")


def test_a_fresh_token_lets_the_act_through(owner):
    client = owner.session_client()

    response = act(client, evidence(client))

    assert response.status_code == 200, response.content
    assert response.json() == {"signedBy": str(owner.user.id)}


def test_the_token_serves_several_acts_within_five_minutes(owner, time_machine):
    client = owner.session_client()
    token = evidence(client)

    time_machine.shift(timedelta(minutes=4, seconds=59))

    assert act(client, token).status_code == 200
    assert act(client, token).status_code == 200


def test_missing_evidence_is_refused(owner):
    client = owner.session_client()

    assert_error(act(client), 403, "FRESH_AUTHENTICATION_REQUIRED")
    assert_error(act(client, ""), 403, "FRESH_AUTHENTICATION_REQUIRED")


def test_expired_evidence_is_refused(owner, time_machine):
    client = owner.session_client()
    token = evidence(client)

    time_machine.shift(timedelta(minutes=5, seconds=1))

    assert_error(act(client, token), 403, "FRESH_AUTHENTICATION_REQUIRED")
    assert act(client, evidence(client)).status_code == 200  # a new confirmation works again


@pytest.mark.parametrize(
    "tamper",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # signature changed
        lambda t: t.replace(t.split(":")[0], t.split(":")[0][:-2] + "xy", 1),  # payload changed
        lambda t: t + "x",
        lambda t: "not-a-token",
    ],
    ids=["signature", "payload", "suffix", "garbage"],
)
def test_tampered_evidence_is_refused(owner, tamper):
    client = owner.session_client()
    token = evidence(client)

    assert_error(act(client, tamper(token)), 403, "FRESH_AUTHENTICATION_REQUIRED")


def test_a_token_signed_for_another_purpose_is_refused(owner):
    client = owner.session_client()
    claims = signing.loads(evidence(client), salt="apps.accounts.act-evidence")
    forged = signing.dumps(claims)  # the same claims under Django's default salt

    assert_error(act(client, forged), 403, "FRESH_AUTHENTICATION_REQUIRED")


def test_another_persons_evidence_is_refused(owner, member_factory):
    colleague = member_factory(role="manager", organization=owner.organization)
    their_token = evidence(colleague.session_client())

    assert_error(act(owner.session_client(), their_token), 403, "FRESH_AUTHENTICATION_REQUIRED")


def test_evidence_from_another_session_of_the_same_person_is_refused(owner):
    laptop, tablet = owner.session_client(), owner.session_client()
    token = evidence(laptop)

    assert_error(act(tablet, token), 403, "FRESH_AUTHENTICATION_REQUIRED")
    assert act(laptop, token).status_code == 200


def test_evidence_does_not_survive_signing_out_and_in(owner):
    client = owner.session_client()
    token = evidence(client)
    assert post(client, "/auth/sign-out").status_code == 200
    client = owner.session_client()

    assert_error(act(client, token), 403, "FRESH_AUTHENTICATION_REQUIRED")


def test_the_guard_refuses_machine_credentials_even_with_valid_evidence(owner):
    token = evidence(owner.session_client())

    response = act(owner.api_client(), token)

    assert_error(response, 403, "FRESH_AUTHENTICATION_REQUIRED")


def test_the_guard_runs_after_the_usual_access_checks(db, owner, member_factory):
    assert_error(post(Client(), ACT, {"noteId": "n-1"}), 401, "UNAUTHENTICATED")
    # A role without the route's permission gets the ordinary 403, evidence or not.
    clinical = member_factory(role="dentist", organization=owner.organization)
    client = clinical.session_client()
    token = evidence(client)

    assert_error(post(client, PRESCRIBE, {"noteId": "n-1"}, **{EVIDENCE: token}), 403, "PERMISSION_DENIED")
    assert act(client, token).status_code == 200
