"""Two-factor through HTTP with a real TOTP generator and a frozen clock: enrolment (expiry, wrong codes, replacement
and its pause), backup codes, disabling, status, storage at rest, the second step of a sign-in (exhaustion, lockout,
expiry), the per-person and per-address buckets and the Redis outage."""

from datetime import timedelta
from urllib.parse import parse_qs, unquote, urlparse

import pytest
from django.test import Client

from apps.accounts.models import BackupCode, SecondFactorGuard, TotpDevice
from apps.core import crypto
from tests.accounts.two_factor_support import (
    BACKUP_CODES,
    DISABLE,
    ME,
    SETUP,
    STATUS,
    VERIFY,
    VERIFY_BACKUP,
    VERIFY_TOTP,
    clock,  # noqa: F401  (fixture)
    code_for,
    enrol,
    now,
    parse_time,
    password_step,
    post,
    secret_key,
    wrong_code,
)
from tests.factories import DEFAULT_PASSWORD
from tests.helpers import assert_error

pytestmark = pytest.mark.usefixtures("clock")


@pytest.fixture
def enrolled(owner):
    return enrol(owner)


@pytest.fixture
def roomy_buckets(settings):
    """Counting tests make more guesses than the per-person burst; set before any bucket is first filled."""
    settings.SVC_SENSITIVE_USER_BUCKET = (100, 1.0)


def replacement_setup(enrolled, **extra):
    return post(
        enrolled.client, SETUP, {"password": DEFAULT_PASSWORD, "currentCode": code_for(enrolled.secret)}, **extra
    )


def status_of(client: Client) -> dict:
    response = client.get(STATUS)
    assert response.status_code == 200, response.content
    return response.json()


def second_step_ok(member, secret: str) -> Client:
    client, body = password_step(member)
    assert body["twoFactorRedirect"] is True
    done = post(client, VERIFY_TOTP, {"code": code_for(secret)})
    assert done.status_code == 200, done.content
    return client


# --- setup ------------------------------------------------------------------------------------------------------


def test_setup_needs_the_password(owner):
    client = owner.session_client()

    missing = post(client, SETUP, {})
    wrong = post(client, SETUP, {"password": DEFAULT_PASSWORD + "x"})

    assert list(assert_error(missing, 400, "VALIDATION_ERROR")["details"]["fields"]) == ["password"]
    assert assert_error(wrong, 400, "INVALID_PASSWORD")["details"] == {"fields": {"password": ["is wrong"]}}
    assert not TotpDevice.objects.filter(user=owner.user).exists()
    assert status_of(client)["pendingSetupExpiresAt"] is None


def test_setup_answers_an_otpauth_uri_carrying_the_secret_and_issuer(owner, settings):
    settings.SVC_TOTP_ISSUER = "Studio Dentistico CRM"
    client = owner.session_client()

    response = post(client, SETUP, {"password": DEFAULT_PASSWORD})

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"otpauthUri", "secret", "expiresAt", "replacesActive"}
    uri = urlparse(body["otpauthUri"])
    query = parse_qs(uri.query)
    assert (uri.scheme, uri.netloc) == ("otpauth", "totp")
    assert unquote(uri.path) == f"/Studio Dentistico CRM:{owner.user.email}"
    assert query["secret"] == [body["secret"]]
    assert query["issuer"] == ["Studio Dentistico CRM"]
    assert query["digits"] == ["6"] and query["period"] == ["30"]
    assert len(secret_key(body["secret"])) >= 16
    assert parse_time(body["expiresAt"]) == now() + timedelta(minutes=10)
    assert body["replacesActive"] is False
    status = status_of(client)
    assert status["enabled"] is False
    assert parse_time(status["pendingSetupExpiresAt"]) == now() + timedelta(minutes=10)


def test_verify_activates_the_authenticator_and_returns_ten_backup_codes(owner):
    client = owner.session_client()
    secret = post(client, SETUP, {"password": DEFAULT_PASSWORD}).json()["secret"]

    response = post(client, VERIFY, {"code": code_for(secret)})

    assert response.status_code == 200, response.content
    codes = response.json()["backupCodes"]
    assert len(codes) == 10 and len(set(codes)) == 10
    status = status_of(client)
    assert status["enabled"] is True
    assert status["pendingSetupExpiresAt"] is None
    assert status["backupCodesRemaining"] == 10
    assert parse_time(status["enabledAt"]) == now()


def test_status_of_a_person_without_two_factor(owner):
    assert status_of(owner.session_client()) == {
        "enabled": False,
        "enabledAt": None,
        "pendingSetupExpiresAt": None,
        "backupCodesRemaining": 0,
    }


def test_setup_still_verifies_just_before_ten_minutes(owner, time_machine):
    client = owner.session_client()
    secret = post(client, SETUP, {"password": DEFAULT_PASSWORD}).json()["secret"]

    time_machine.shift(timedelta(minutes=9, seconds=58))

    assert post(client, VERIFY, {"code": code_for(secret)}).status_code == 200


def test_setup_expires_after_ten_minutes(owner, time_machine):
    client = owner.session_client()
    secret = post(client, SETUP, {"password": DEFAULT_PASSWORD}).json()["secret"]

    time_machine.shift(timedelta(minutes=10))
    response = post(client, VERIFY, {"code": code_for(secret)})

    assert_error(response, 409, "TWO_FACTOR_SETUP_NOT_FOUND")
    status = status_of(client)
    assert status["enabled"] is False and status["pendingSetupExpiresAt"] is None
    assert not TotpDevice.objects.filter(user=owner.user, confirmed=True).exists()


def test_five_wrong_codes_cancel_the_pending_setup(owner):
    client = owner.session_client()
    secret = post(client, SETUP, {"password": DEFAULT_PASSWORD}).json()["secret"]
    bad = wrong_code(secret)

    answers = [post(client, VERIFY, {"code": bad}) for _ in range(5)]

    for attempt, answer in enumerate(answers[:4], start=1):
        assert assert_error(answer, 400, "INVALID_TWO_FACTOR_CODE")["details"] == {"attemptsLeft": 5 - attempt}
    last = assert_error(answers[4], 400, "INVALID_TWO_FACTOR_CODE")
    assert last["details"]["setupCancelled"] is True
    assert_error(post(client, VERIFY, {"code": code_for(secret)}), 409, "TWO_FACTOR_SETUP_NOT_FOUND")
    assert not TotpDevice.objects.filter(user=owner.user).exists()
    assert status_of(client)["enabled"] is False


def test_verify_without_a_setup_is_409(owner):
    assert_error(post(owner.session_client(), VERIFY, {"code": "123456"}), 409, "TWO_FACTOR_SETUP_NOT_FOUND")


def test_a_new_setup_replaces_the_pending_one(owner):
    client = owner.session_client()
    first = post(client, SETUP, {"password": DEFAULT_PASSWORD}).json()["secret"]
    second = post(client, SETUP, {"password": DEFAULT_PASSWORD}).json()["secret"]

    assert first != second
    assert TotpDevice.objects.filter(user=owner.user, confirmed=False).count() == 1
    assert_error(post(client, VERIFY, {"code": code_for(first)}), 400, "INVALID_TWO_FACTOR_CODE")
    assert post(client, VERIFY, {"code": code_for(second)}).status_code == 200


def test_delete_cancels_only_the_pending_setup(enrolled, time_machine):
    time_machine.shift(30)
    assert replacement_setup(enrolled).status_code == 200
    pending_secret = TotpDevice.objects.get(user=enrolled.member.user, confirmed=False)

    response = enrolled.client.delete(SETUP)

    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True}
    assert not TotpDevice.objects.filter(pk=pending_secret.pk).exists()
    assert_error(post(enrolled.client, VERIFY, {"code": "123456"}), 409, "TWO_FACTOR_SETUP_NOT_FOUND")
    status = status_of(enrolled.client)
    assert status["enabled"] is True and status["pendingSetupExpiresAt"] is None
    time_machine.shift(30)
    second_step_ok(enrolled.member, enrolled.secret)  # the active authenticator keeps working


def test_delete_without_a_pending_setup_keeps_the_active_authenticator(enrolled, time_machine):
    assert enrolled.client.delete(SETUP).status_code == 200

    time_machine.shift(30)
    second_step_ok(enrolled.member, enrolled.secret)


# --- replacing an active authenticator --------------------------------------------------------------------------


def test_replacement_needs_the_current_code(enrolled):
    response = post(enrolled.client, SETUP, {"password": DEFAULT_PASSWORD})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert list(body["details"]["fields"]) == ["currentCode"]
    assert not TotpDevice.objects.filter(user=enrolled.member.user, confirmed=False).exists()


def test_replacement_checks_the_password_first(enrolled, time_machine):
    time_machine.shift(30)
    response = post(enrolled.client, SETUP, {"password": "not-my-password-1", "currentCode": code_for(enrolled.secret)})

    assert_error(response, 400, "INVALID_PASSWORD")
    assert not TotpDevice.objects.filter(user=enrolled.member.user, confirmed=False).exists()


def test_a_wrong_current_code_is_400_with_attempts_left(enrolled):
    response = post(enrolled.client, SETUP, {"password": DEFAULT_PASSWORD, "currentCode": wrong_code(enrolled.secret)})

    assert assert_error(response, 400, "INVALID_TWO_FACTOR_CODE")["details"] == {"attemptsLeft": 4}
    assert not TotpDevice.objects.filter(user=enrolled.member.user, confirmed=False).exists()


def test_five_wrong_current_codes_pause_replacement_for_fifteen_minutes(enrolled, time_machine):
    body = {"password": DEFAULT_PASSWORD, "currentCode": wrong_code(enrolled.secret)}
    answers = [post(enrolled.client, SETUP, body) for _ in range(5)]

    assert [a.status_code for a in answers[:4]] == [400, 400, 400, 400]
    paused = assert_error(answers[4], 429, "TWO_FACTOR_REPLACEMENT_PAUSED")
    assert int(answers[4]["Retry-After"]) == 900
    assert paused["details"] == {"retryAfter": 900}

    time_machine.shift(30)
    right_code = assert_error(replacement_setup(enrolled), 429, "TWO_FACTOR_REPLACEMENT_PAUSED")
    assert right_code["details"]["retryAfter"] == 870

    time_machine.shift(timedelta(minutes=14, seconds=29))
    still = replacement_setup(enrolled)
    assert_error(still, 429, "TWO_FACTOR_REPLACEMENT_PAUSED")
    assert 1 <= int(still["Retry-After"]) <= 1
    assert not TotpDevice.objects.filter(user=enrolled.member.user, confirmed=False).exists()

    time_machine.shift(1)
    resumed = replacement_setup(enrolled)
    assert resumed.status_code == 200, resumed.content
    assert resumed.json()["replacesActive"] is True


def test_a_right_current_code_resets_the_replacement_count(enrolled, time_machine):
    body = {"password": DEFAULT_PASSWORD, "currentCode": wrong_code(enrolled.secret)}
    for _ in range(4):
        assert post(enrolled.client, SETUP, body).status_code == 400
    time_machine.shift(30)
    assert replacement_setup(enrolled).status_code == 200

    answers = [post(enrolled.client, SETUP, {**body, "currentCode": wrong_code(enrolled.secret)}) for _ in range(4)]

    assert [a.status_code for a in answers] == [400, 400, 400, 400]


def test_verifying_a_replacement_swaps_the_authenticator_and_the_backup_codes(enrolled, time_machine):
    user = enrolled.member.user
    time_machine.shift(30)
    started = replacement_setup(enrolled)
    assert started.status_code == 200, started.content
    new_secret = started.json()["secret"]
    assert started.json()["replacesActive"] is True
    assert status_of(enrolled.client)["enabled"] is True  # the old one stays active until the new one is verified

    verified = post(enrolled.client, VERIFY, {"code": code_for(new_secret)})

    assert verified.status_code == 200, verified.content
    new_codes = verified.json()["backupCodes"]
    assert len(new_codes) == 10 and not set(new_codes) & set(enrolled.backup_codes)
    assert TotpDevice.objects.filter(user=user, confirmed=True).count() == 1
    time_machine.shift(30)
    client, _ = password_step(enrolled.member)
    assert_error(post(client, VERIFY_TOTP, {"code": code_for(enrolled.secret)}), 400, "INVALID_TWO_FACTOR_CODE")
    assert post(client, VERIFY_TOTP, {"code": code_for(new_secret)}).status_code == 200
    old_backup, _ = password_step(enrolled.member)
    assert_error(post(old_backup, VERIFY_BACKUP, {"code": enrolled.backup_codes[0]}), 400, "INVALID_TWO_FACTOR_CODE")
    assert post(old_backup, VERIFY_BACKUP, {"code": new_codes[0]}).status_code == 200


# --- storage at rest ----------------------------------------------------------------------------------------------


def test_backup_codes_are_stored_as_digests_only(enrolled):
    rows = list(BackupCode.objects.filter(user=enrolled.member.user))

    assert len(rows) == 10
    stored = " ".join(row.digest for row in rows)
    for code in enrolled.backup_codes:
        assert code not in stored
        assert code.replace("-", "") not in stored
    assert len({row.digest for row in rows}) == 10
    status = status_of(enrolled.client)
    assert status["backupCodesRemaining"] == 10
    assert not any(code in str(status) for code in enrolled.backup_codes)  # shown once, never again


def test_the_totp_key_is_encrypted_at_rest(enrolled):
    device = TotpDevice.objects.get(user=enrolled.member.user, confirmed=True)
    key = secret_key(enrolled.secret)

    assert device.key_encrypted
    for plaintext in (enrolled.secret, key.hex(), key.hex().upper()):
        assert plaintext not in device.key_encrypted
    assert crypto.decrypt(device.key_encrypted) == key.hex()  # the stored value is the key, encrypted


# --- backup codes -----------------------------------------------------------------------------------------------


def test_new_backup_codes_replace_all_old_ones(enrolled):
    response = post(enrolled.client, BACKUP_CODES, {"password": DEFAULT_PASSWORD})

    assert response.status_code == 200, response.content
    fresh = response.json()["backupCodes"]
    assert len(fresh) == 10 and not set(fresh) & set(enrolled.backup_codes)
    assert BackupCode.objects.filter(user=enrolled.member.user).count() == 10
    for old in enrolled.backup_codes[:2]:
        client, _ = password_step(enrolled.member)
        assert_error(post(client, VERIFY_BACKUP, {"code": old}), 400, "INVALID_TWO_FACTOR_CODE")
    client, _ = password_step(enrolled.member)
    assert post(client, VERIFY_BACKUP, {"code": fresh[0]}).status_code == 200


def test_new_backup_codes_need_the_right_password(enrolled):
    response = post(enrolled.client, BACKUP_CODES, {"password": "not-my-password-1"})

    assert_error(response, 400, "INVALID_PASSWORD")
    client, _ = password_step(enrolled.member)
    assert post(client, VERIFY_BACKUP, {"code": enrolled.backup_codes[0]}).status_code == 200  # old codes kept


def test_backup_codes_without_two_factor_are_409(owner):
    assert_error(
        post(owner.session_client(), BACKUP_CODES, {"password": DEFAULT_PASSWORD}), 409, "TWO_FACTOR_NOT_ENABLED"
    )
    assert not BackupCode.objects.filter(user=owner.user).exists()


# --- disabling ----------------------------------------------------------------------------------------------------


def assert_two_factor_off(member, client: Client) -> None:
    assert status_of(client)["enabled"] is False
    assert not TotpDevice.objects.filter(user=member.user).exists()
    assert not BackupCode.objects.filter(user=member.user).exists()
    _, body = password_step(member)
    assert body["twoFactorRedirect"] is False


def test_disable_with_a_current_totp_code(enrolled, time_machine):
    time_machine.shift(30)

    response = post(enrolled.client, DISABLE, {"password": DEFAULT_PASSWORD, "currentCode": code_for(enrolled.secret)})

    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True}
    assert_two_factor_off(enrolled.member, enrolled.client)


def test_disable_with_an_unused_backup_code(enrolled):
    response = post(enrolled.client, DISABLE, {"password": DEFAULT_PASSWORD, "currentCode": enrolled.backup_codes[3]})

    assert response.status_code == 200, response.content
    assert_two_factor_off(enrolled.member, enrolled.client)


def test_disable_with_a_spent_backup_code_is_refused(enrolled):
    client, _ = password_step(enrolled.member)
    assert post(client, VERIFY_BACKUP, {"code": enrolled.backup_codes[0]}).status_code == 200

    response = post(enrolled.client, DISABLE, {"password": DEFAULT_PASSWORD, "currentCode": enrolled.backup_codes[0]})

    assert_error(response, 400, "INVALID_TWO_FACTOR_CODE")
    assert status_of(enrolled.client)["enabled"] is True


def test_disable_with_a_wrong_code_is_400_and_changes_nothing(enrolled):
    for code in (wrong_code(enrolled.secret), "abcde-fghjk"):
        response = post(enrolled.client, DISABLE, {"password": DEFAULT_PASSWORD, "currentCode": code})
        assert_error(response, 400, "INVALID_TWO_FACTOR_CODE")

    assert status_of(enrolled.client)["enabled"] is True
    assert BackupCode.objects.filter(user=enrolled.member.user, used_at__isnull=True).count() == 10


def test_disable_with_a_wrong_password_is_400_and_spends_no_code(enrolled, time_machine):
    time_machine.shift(30)
    code = code_for(enrolled.secret)

    refused = post(enrolled.client, DISABLE, {"password": "not-my-password-1", "currentCode": code})

    assert_error(refused, 400, "INVALID_PASSWORD")
    assert status_of(enrolled.client)["enabled"] is True
    accepted = post(enrolled.client, DISABLE, {"password": DEFAULT_PASSWORD, "currentCode": code})
    assert accepted.status_code == 200, accepted.content


def test_disable_when_two_factor_is_off_is_409(owner):
    response = post(owner.session_client(), DISABLE, {"password": DEFAULT_PASSWORD, "currentCode": "123456"})

    assert_error(response, 409, "TWO_FACTOR_NOT_ENABLED")


def test_disable_needs_both_fields(enrolled):
    body = assert_error(post(enrolled.client, DISABLE, {}), 400, "VALIDATION_ERROR")

    assert set(body["details"]["fields"]) == {"password", "currentCode"}


def test_a_totp_code_is_accepted_once(enrolled, time_machine):
    time_machine.shift(30)
    code = code_for(enrolled.secret)
    first, _ = password_step(enrolled.member)
    assert post(first, VERIFY_TOTP, {"code": code}).status_code == 200

    second, _ = password_step(enrolled.member)
    replay = post(second, VERIFY_TOTP, {"code": code})
    disable = post(enrolled.client, DISABLE, {"password": DEFAULT_PASSWORD, "currentCode": code})

    assert_error(replay, 400, "INVALID_TWO_FACTOR_CODE")
    assert_error(disable, 400, "INVALID_TWO_FACTOR_CODE")
    time_machine.shift(30)
    assert post(second, VERIFY_TOTP, {"code": code_for(enrolled.secret)}).status_code == 200


def test_the_enrolment_code_cannot_complete_a_sign_in(enrolled):
    client, _ = password_step(enrolled.member)

    assert_error(post(client, VERIFY_TOTP, {"code": code_for(enrolled.secret)}), 400, "INVALID_TWO_FACTOR_CODE")


@pytest.mark.parametrize(("method", "path"), [("get", STATUS), ("post", SETUP), ("delete", SETUP), ("post", VERIFY)])
def test_two_factor_management_needs_a_signed_in_session(db, method, path):
    response = getattr(Client(), method)(path, {}, content_type="application/json")

    assert_error(response, 401, "UNAUTHENTICATED")


def test_a_half_signed_in_session_cannot_manage_two_factor(enrolled):
    client, _ = password_step(enrolled.member)

    assert_error(client.get(STATUS), 401, "UNAUTHENTICATED")
    assert_error(post(client, BACKUP_CODES, {"password": DEFAULT_PASSWORD}), 401, "UNAUTHENTICATED")


# --- the second step of a sign-in ---------------------------------------------------------------------------------


def test_sign_in_answers_a_redirect_and_no_session(enrolled):
    client, body = password_step(enrolled.member)

    assert body["twoFactorRedirect"] is True
    assert "user" not in body
    assert body.get("activeOrganizationId") is None
    assert parse_time(body["twoFactorExpiresAt"]) == now() + timedelta(minutes=10)
    assert_error(client.get(ME), 401, "UNAUTHENTICATED")


def test_verify_totp_completes_the_sign_in(enrolled, time_machine):
    time_machine.shift(30)
    client, _ = password_step(enrolled.member)

    response = post(client, VERIFY_TOTP, {"code": code_for(enrolled.secret)})

    assert response.status_code == 200, response.content
    user = enrolled.member.user
    assert response.json() == {
        "twoFactorRedirect": False,
        "user": {"id": str(user.id), "email": user.email, "name": user.name},
        "activeOrganizationId": str(enrolled.member.organization.id),
    }
    me = client.get(ME)
    assert me.status_code == 200, me.content
    assert me.json()["user"]["id"] == str(user.id)
    assert response.cookies["csrftoken"].value


def test_verify_backup_code_completes_the_sign_in_and_spends_the_code(enrolled):
    client, _ = password_step(enrolled.member)

    response = post(client, VERIFY_BACKUP, {"code": enrolled.backup_codes[4]})

    assert response.status_code == 200, response.content
    assert client.get(ME).status_code == 200
    assert status_of(enrolled.client)["backupCodesRemaining"] == 9
    again, _ = password_step(enrolled.member)
    assert_error(post(again, VERIFY_BACKUP, {"code": enrolled.backup_codes[4]}), 400, "INVALID_TWO_FACTOR_CODE")
    assert_error(again.get(ME), 401, "UNAUTHENTICATED")


def test_five_wrong_codes_exhaust_the_second_step(enrolled, time_machine):
    time_machine.shift(30)
    client, _ = password_step(enrolled.member)
    bad = wrong_code(enrolled.secret)

    answers = [post(client, VERIFY_TOTP, {"code": bad}) for _ in range(5)]

    for attempt, answer in enumerate(answers[:4], start=1):
        assert assert_error(answer, 400, "INVALID_TWO_FACTOR_CODE")["details"] == {"attemptsLeft": 5 - attempt}
    assert_error(answers[4], 401, "TWO_FACTOR_CHALLENGE_EXPIRED")
    assert_error(post(client, VERIFY_TOTP, {"code": code_for(enrolled.secret)}), 401, "TWO_FACTOR_CHALLENGE_EXPIRED")
    assert_error(post(client, VERIFY_BACKUP, {"code": enrolled.backup_codes[0]}), 401, "TWO_FACTOR_CHALLENGE_EXPIRED")
    assert_error(client.get(ME), 401, "UNAUTHENTICATED")

    password_step(enrolled.member, client)
    assert post(client, VERIFY_TOTP, {"code": code_for(enrolled.secret)}).status_code == 200


def test_wrong_backup_codes_count_towards_the_same_step(enrolled):
    client, _ = password_step(enrolled.member)

    answers = [post(client, VERIFY_BACKUP, {"code": f"wrong-code{n}"}) for n in range(5)]

    assert [a.status_code for a in answers] == [400, 400, 400, 400, 401]
    assert_error(post(client, VERIFY_BACKUP, {"code": enrolled.backup_codes[0]}), 401, "TWO_FACTOR_CHALLENGE_EXPIRED")


def fail_sign_in(member, secret: str, wrong: int) -> list[int]:
    client, _ = password_step(member)
    return [post(client, VERIFY_TOTP, {"code": wrong_code(secret)}).status_code for _ in range(wrong)]


def test_ten_consecutive_failures_lock_the_second_step_for_fifteen_minutes(roomy_buckets, enrolled, time_machine):
    member, secret = enrolled.member, enrolled.secret
    assert fail_sign_in(member, secret, 5) == [400, 400, 400, 400, 401]
    client, _ = password_step(member)
    statuses = [post(client, VERIFY_TOTP, {"code": wrong_code(secret)}).status_code for _ in range(4)]
    locked = post(client, VERIFY_TOTP, {"code": wrong_code(secret)})

    assert statuses == [400, 400, 400, 400]
    assert assert_error(locked, 429, "TWO_FACTOR_LOCKED")["details"] == {"retryAfter": 900}
    assert locked["Retry-After"] == "900"

    time_machine.shift(30)
    retry, _ = password_step(member)
    right = post(retry, VERIFY_TOTP, {"code": code_for(secret)})
    backup = post(retry, VERIFY_BACKUP, {"code": enrolled.backup_codes[0]})
    assert_error(right, 429, "TWO_FACTOR_LOCKED")
    assert int(right["Retry-After"]) == 870
    assert_error(backup, 429, "TWO_FACTOR_LOCKED")
    assert_error(retry.get(ME), 401, "UNAUTHENTICATED")
    assert BackupCode.objects.filter(user=member.user, used_at__isnull=True).count() == 10

    time_machine.shift(timedelta(minutes=14, seconds=29))
    late, _ = password_step(member)
    still = post(late, VERIFY_TOTP, {"code": code_for(secret)})
    assert_error(still, 429, "TWO_FACTOR_LOCKED")
    assert still["Retry-After"] == "1"

    time_machine.shift(1)
    assert post(late, VERIFY_TOTP, {"code": code_for(secret)}).status_code == 200
    assert late.get(ME).status_code == 200


def test_a_successful_second_step_resets_the_consecutive_count(roomy_buckets, enrolled, time_machine):
    member, secret = enrolled.member, enrolled.secret
    assert fail_sign_in(member, secret, 5) == [400, 400, 400, 400, 401]
    client, _ = password_step(member)
    assert [post(client, VERIFY_TOTP, {"code": wrong_code(secret)}).status_code for _ in range(4)] == [400] * 4
    time_machine.shift(30)
    assert post(client, VERIFY_TOTP, {"code": code_for(secret)}).status_code == 200

    after = fail_sign_in(member, secret, 5) + fail_sign_in(member, secret, 4)

    assert after == [400, 400, 400, 400, 401, 400, 400, 400, 400]
    assert SecondFactorGuard.objects.get(user=member.user).sign_in_locked_until is None


def test_the_second_step_expires_after_ten_minutes(enrolled, time_machine):
    early, _ = password_step(enrolled.member)
    time_machine.shift(60)
    later, _ = password_step(enrolled.member)

    time_machine.shift(timedelta(minutes=9))

    assert_error(post(early, VERIFY_TOTP, {"code": code_for(enrolled.secret)}), 401, "TWO_FACTOR_CHALLENGE_EXPIRED")
    assert post(later, VERIFY_TOTP, {"code": code_for(enrolled.secret)}).status_code == 200
    assert_error(early.get(ME), 401, "UNAUTHENTICATED")


@pytest.mark.parametrize("path", [VERIFY_TOTP, VERIFY_BACKUP])
def test_second_step_without_a_password_step_is_401(enrolled, path):
    response = post(Client(), path, {"code": code_for(enrolled.secret)})

    assert_error(response, 401, "TWO_FACTOR_CHALLENGE_EXPIRED")


def test_a_signed_in_session_has_no_pending_second_step(owner):
    client = owner.session_client()

    assert_error(post(client, VERIFY_TOTP, {"code": "123456"}), 401, "TWO_FACTOR_CHALLENGE_EXPIRED")


# --- buckets and outage -------------------------------------------------------------------------------------------


def test_second_step_is_throttled_per_person_across_addresses(enrolled, member_factory, settings):
    settings.SVC_SENSITIVE_USER_BUCKET = (3, 0.01)
    client, _ = password_step(enrolled.member)
    bad = wrong_code(enrolled.secret)

    answers = [
        post(client, VERIFY_TOTP, {"code": bad}, REMOTE_ADDR=f"198.51.100.{n}")
        for n in range(1, 5)  # a new address each time
    ]

    assert [a.status_code for a in answers[:3]] == [400, 400, 400]
    body = assert_error(answers[3], 429, "RATE_LIMITED")
    assert int(answers[3]["Retry-After"]) >= 1
    assert body["details"] == {"retryAfter": int(answers[3]["Retry-After"])}
    other = member_factory(role="manager")
    assert other.session_client().get(STATUS, REMOTE_ADDR="198.51.100.1").status_code == 200


def test_signed_in_sensitive_routes_are_throttled_per_person(owner, member_factory, settings):
    settings.SVC_SENSITIVE_USER_BUCKET = (3, 0.01)
    client = owner.session_client()

    statuses = [client.get(STATUS, REMOTE_ADDR=f"203.0.113.{n}").status_code for n in range(1, 4)]
    limited = post(client, SETUP, {"password": DEFAULT_PASSWORD}, REMOTE_ADDR="203.0.113.9")

    assert statuses == [200, 200, 200]
    assert_error(limited, 429, "RATE_LIMITED")
    assert 90 <= int(limited["Retry-After"]) <= 100
    assert not TotpDevice.objects.filter(user=owner.user).exists()
    assert member_factory(role="manager").session_client().get(STATUS).status_code == 200


def test_sensitive_routes_are_throttled_per_address(owner, member_factory, settings):
    settings.SVC_SENSITIVE_ADDRESS_BUCKET = (3, 0.01)
    people = [owner.session_client()] + [member_factory(role="manager").session_client() for _ in range(3)]

    statuses = [c.get(STATUS, REMOTE_ADDR="203.0.113.50").status_code for c in people[:3]]
    limited = people[3].get(STATUS, REMOTE_ADDR="203.0.113.50")

    assert statuses == [200, 200, 200]
    assert_error(limited, 429, "RATE_LIMITED")
    assert int(limited["Retry-After"]) >= 1
    assert people[3].get(STATUS, REMOTE_ADDR="203.0.113.51").status_code == 200


def test_the_second_step_is_throttled_per_address(owner, member_factory, settings):
    people = [enrol(owner), enrol(member_factory(role="manager")), enrol(member_factory(role="analyst"))]
    settings.SVC_SENSITIVE_ADDRESS_BUCKET = (2, 0.01)
    clients = [password_step(person.member)[0] for person in people]

    answers = [
        post(c, VERIFY_BACKUP, {"code": p.backup_codes[0]}, REMOTE_ADDR="192.0.2.10")
        for c, p in zip(clients, people, strict=True)
    ]

    assert [a.status_code for a in answers[:2]] == [200, 200]
    assert_error(answers[2], 429, "RATE_LIMITED")
    assert BackupCode.objects.filter(user=people[2].member.user, used_at__isnull=True).count() == 10


def break_redis(settings) -> None:
    settings.CACHES = {
        **settings.CACHES,
        "default": {**settings.CACHES["default"], "LOCATION": "redis://127.0.0.1:1/0"},
    }


def test_sensitive_routes_fail_closed_when_redis_is_down(owner, settings):
    client = owner.session_client()
    break_redis(settings)

    setup = post(client, SETUP, {"password": DEFAULT_PASSWORD})
    status = client.get(STATUS)

    assert_error(setup, 503, "SERVICE_UNAVAILABLE")
    assert int(setup["Retry-After"]) >= 1
    assert_error(status, 503, "SERVICE_UNAVAILABLE")
    assert not TotpDevice.objects.filter(user=owner.user).exists()


def test_the_second_step_fails_closed_when_redis_is_down(enrolled, settings):
    client, _ = password_step(enrolled.member)
    break_redis(settings)

    response = post(client, VERIFY_BACKUP, {"code": enrolled.backup_codes[0]})

    assert_error(response, 503, "SERVICE_UNAVAILABLE")
    assert response["Retry-After"].isdigit()
    assert_error(client.get(ME), 401, "UNAUTHENTICATED")
    assert BackupCode.objects.filter(user=enrolled.member.user, used_at__isnull=True).count() == 10
