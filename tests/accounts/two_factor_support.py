"""Helpers shared by the two-factor, act-evidence, invitation and team tests: a real TOTP generator (django-otp's
arithmetic), enrolment through HTTP, JSON posts and the access-generation header."""

import time
from base64 import b32decode
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from django import forms
from django.test import Client
from django_otp.oath import TOTP

from tests.conftest import Member
from tests.factories import DEFAULT_PASSWORD

STEP = 30
SIGN_IN = "/auth/sign-in/email"
ME = "/auth/me"
VERIFY_TOTP = "/auth/two-factor/verify-totp"
VERIFY_BACKUP = "/auth/two-factor/verify-backup-code"
STATUS = "/user/two-factor"
SETUP = "/user/two-factor/setup"
VERIFY = "/user/two-factor/verify"
DISABLE = "/user/two-factor/disable"
BACKUP_CODES = "/user/two-factor/backup-codes"
REAUTHENTICATE = "/user/reauthenticate"
GENERATION = "X-Service-Access-Generation"


def post(client: Client, path: str, data=None, **extra):
    return client.post(path, data if data is not None else {}, content_type="application/json", **extra)


def put(client: Client, path: str, data, **extra):
    return client.put(path, data, content_type="application/json", **extra)


def secret_key(secret_b32: str) -> bytes:
    return b32decode(secret_b32 + "=" * (-len(secret_b32) % 8))


def code_for(secret_b32: str, *, steps: int = 0) -> str:
    """The six-digit code an authenticator app shows now (time from the patched clock), `steps` periods away."""
    generator = TOTP(secret_key(secret_b32), step=STEP, t0=0, digits=6)
    generator.time = time.time() + steps * STEP
    return f"{generator.token():06d}"


def wrong_code(secret_b32: str) -> str:
    """Six digits the authenticator accepts at no step within the tolerance window (±1 step)."""
    near = {code_for(secret_b32, steps=d) for d in range(-2, 3)}
    return next(c for c in ("123456", "654321", "000000", "111111", "999999") if c not in near)


@pytest.fixture
def clock(time_machine):
    """Frozen time at the start of a TOTP period: nothing moves unless a test shifts it."""
    start = (int(time.time()) // STEP) * STEP + 1
    time_machine.move_to(datetime.fromtimestamp(start, tz=UTC), tick=False)
    return time_machine


def now() -> datetime:
    return datetime.fromtimestamp(time.time(), tz=UTC)


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@dataclass
class Enrolled:
    member: Member
    client: Client
    secret: str
    backup_codes: list[str]


def enrol(member: Member, client: Client | None = None) -> Enrolled:
    """Set up and activate an authenticator for this member through HTTP (its current code is then spent)."""
    client = client or member.session_client()
    setup = post(client, SETUP, {"password": DEFAULT_PASSWORD})
    assert setup.status_code == 200, setup.content
    secret = setup.json()["secret"]
    verified = post(client, VERIFY, {"code": code_for(secret)})
    assert verified.status_code == 200, verified.content
    return Enrolled(member, client, secret, verified.json()["backupCodes"])


def password_step(member: Member, client: Client | None = None, **extra) -> tuple[Client, dict]:
    """The password step of a sign-in; returns the client (holding the half-signed-in session) and the body."""
    client = client or Client()
    response = post(client, SIGN_IN, {"email": member.user.email, "password": DEFAULT_PASSWORD}, **extra)
    assert response.status_code == 200, response.content
    return client, response.json()


def generation(client: Client, **extra) -> str:
    response = client.get(ME, **extra)
    assert response.status_code == 200, response.content
    return response[GENERATION]


def admin_form_data(response) -> dict:
    """The POST body a browser would send back from an admin change page, unchanged (main form and inlines)."""
    data: dict = {}

    def add(form) -> None:
        for bound in form:
            value = bound.value()
            if isinstance(bound.field, forms.BooleanField):
                if value:
                    data[bound.html_name] = "on"
            elif value is None:
                data[bound.html_name] = ""
            elif isinstance(value, list | tuple):
                data[bound.html_name] = [str(v) for v in value]
            else:
                data[bound.html_name] = str(value)

    add(response.context["adminform"].form)
    for inline in response.context.get("inline_admin_formsets", []):
        add(inline.formset.management_form)
        for form in inline.formset.forms:
            add(form)
    return data
