"""The public /referral/* routes: page config, submit (lead, attribution, consent evidence), status (advocate's
anonymised progress, friend's own), every token kind valid / tampered / rotated / wrong kind / other practice's,
buckets (429), the 256 KiB cap (413), and 503 when the submission cannot be stored."""

import json

from django.db import connection

from apps.patients.models import MarketingConsent, Patient
from apps.referrals.models import Referral
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.referrals.conftest import make_advocate, make_programme, post_json

FRIEND = {"firstName": "Bob", "lastName": "Friend", "email": "bob@example.com", "marketingConsent": True}


def submit(client, token, body=None):
    return post_json(client, f"/referral/{token}/submit", FRIEND if body is None else body)


def test_page_config(client, advocate):
    response = client.get(f"/referral/{advocate['shareToken']}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["programmeName"] == "Refer a friend"
    assert body["advocateFirstName"] == "Alice"
    assert body["consentText"] == "Send me offers."
    assert "Advocate" not in json.dumps(body)  # no last name, no contact details


def test_submit_makes_an_attributed_lead_with_consent_evidence(client, owner, advocate):
    response = submit(client, advocate["shareToken"])
    assert response.status_code == 201, response.content
    assert response.json()["ok"] is True
    friend = Patient.objects.for_org(owner.organization).get(email="bob@example.com")
    assert friend.status == "lead"
    assert str(friend.referred_by_patient_id) == advocate["patientId"]
    assert friend.lead_source.name == "Referral"
    consent = MarketingConsent.objects.for_org(owner.organization).get(patient=friend)
    assert consent.channel == "email" and consent.status == "granted" and consent.source == "referral_page"
    assert "Send me offers." in consent.evidence
    detail = owner.api_client().get(f"/patients/{friend.id}?embed=journeys").json()
    assert len(detail["journeys"]) == 1


def test_submit_without_consent_records_none(client, owner, advocate):
    response = submit(client, advocate["shareToken"], FRIEND | {"marketingConsent": False, "phone": "+44 7700 900123"})
    assert response.status_code == 201
    assert not MarketingConsent.objects.for_org(owner.organization).exists()


def test_submit_validation(client, advocate):
    assert_error(submit(client, advocate["shareToken"], {"firstName": "Bob"}), 400, "VALIDATION_ERROR")
    assert_error(submit(client, advocate["shareToken"], FRIEND | {"extra": 1}), 400, "VALIDATION_ERROR")
    assert_error(submit(client, advocate["shareToken"], FRIEND | {"firstName": 7}), 400, "VALIDATION_ERROR")
    assert not Referral.objects.unscoped().exists()


def test_known_friend_makes_no_lead_and_looks_the_same(client, owner, advocate):
    PatientFactory(organization=owner.organization, email="bob@example.com")
    response = submit(client, advocate["shareToken"])
    assert response.status_code == 201
    assert Patient.objects.for_org(owner.organization).filter(email="bob@example.com").count() == 1
    friend_view = client.get(f"/referral/{response.json()['patientToken']}/status").json()
    assert friend_view["status"] == "submitted"
    progress = client.get(f"/referral/{advocate['statusToken']}/status").json()
    assert [r["status"] for r in progress["referrals"]] == ["submitted"]


def test_status_is_anonymised(client, advocate):
    submitted = submit(client, advocate["shareToken"]).json()
    response = client.get(f"/referral/{advocate['statusToken']}/status")
    assert response.status_code == 200
    body = response.json()
    assert body["kind"] == "advocate"
    assert body["referrals"] == [
        {"initials": "BF", "status": "submitted", "submittedAt": body["referrals"][0]["submittedAt"],
         "succeededAt": None}
    ]  # fmt: skip
    text = json.dumps(body)
    assert "Bob" not in text and "Friend" not in text and "bob@example.com" not in text
    friend = client.get(f"/referral/{submitted['patientToken']}/status").json()
    assert friend["kind"] == "referred" and friend["status"] == "submitted"
    assert "Bob" not in json.dumps(friend) and "Alice" not in json.dumps(friend)


def test_tokens_tampered_wrong_kind_unknown(client, advocate):
    share, status = advocate["shareToken"], advocate["statusToken"]
    patient_token = submit(client, share).json()["patientToken"]
    tampered = share[:-1] + ("A" if share[-1] != "A" else "B")
    for path in (
        f"/referral/{tampered}",
        f"/referral/{status}",  # a status token is not a share token
        f"/referral/{patient_token}",
        f"/referral/{share}/status",  # a share token reads no progress
        f"/referral/{status[:-2]}/status",
        f"/referral/{patient_token}x/status",
        "/referral/nonsense",
        "/referral/" + "rfs_" + "a" * 200,
    ):
        assert_error(client.get(path), 404, "NOT_FOUND")
    assert_error(submit(client, tampered), 404, "NOT_FOUND")
    assert_error(submit(client, status), 404, "NOT_FOUND")


def test_other_practices_tokens_show_only_their_practice(client, owner, outsider, advocate):
    other_api = outsider.api_client()
    other_programme = make_programme(other_api, name="Other scheme")
    other = make_advocate(other_api, outsider.organization, other_programme, email="alice2@example.com")
    submit(client, other["shareToken"])
    # The friend became a lead of the other practice only; the owner's advocate saw nothing.
    assert not Patient.objects.for_org(owner.organization).filter(email="bob@example.com").exists()
    assert Patient.objects.for_org(outsider.organization).filter(email="bob@example.com").exists()
    assert client.get(f"/referral/{advocate['statusToken']}/status").json()["referrals"] == []
    assert client.get(f"/referral/{other['shareToken']}").json()["programmeName"] == "Other scheme"


def test_inactive_programme_closes_share_links(api, client, programme, advocate):
    api.patch(f"/referral-programmes/{programme['id']}", {"active": False}, content_type="application/json")
    assert_error(client.get(f"/referral/{advocate['shareToken']}"), 404, "NOT_FOUND")
    assert_error(submit(client, advocate["shareToken"]), 404, "NOT_FOUND")
    assert client.get(f"/referral/{advocate['statusToken']}/status").status_code == 200


def test_buckets_per_practice(client, settings, owner, outsider, advocate):
    settings.SVC_REFERRAL_CONFIG_BUCKET = (2, 0.001)
    settings.SVC_REFERRAL_SUBMIT_BUCKET = (1, 0.001)
    settings.SVC_REFERRAL_STATUS_BUCKET = (2, 0.001)
    share, status = advocate["shareToken"], advocate["statusToken"]
    assert client.get(f"/referral/{share}").status_code == 200
    assert client.get(f"/referral/{share}").status_code == 200
    limited = client.get(f"/referral/{share}")
    assert limited.status_code == 429 and int(limited["Retry-After"]) >= 1
    assert submit(client, share).status_code == 201
    assert submit(client, share, FRIEND | {"email": "c@example.com"}).status_code == 429
    assert client.get(f"/referral/{status}/status").status_code == 200
    assert client.get(f"/referral/{status}/status").status_code == 200
    assert client.get(f"/referral/{status}/status").status_code == 429
    # Another practice has its own buckets.
    other_api = outsider.api_client()
    other = make_advocate(other_api, outsider.organization, make_programme(other_api), email="z@example.com")
    assert client.get(f"/referral/{other['shareToken']}").status_code == 200


def test_abuse_screen(client, settings, advocate):
    settings.SVC_PUBLIC_SCREEN_RATE = "2/m"
    assert client.get("/referral/unknown").status_code == 404
    assert client.get(f"/referral/{advocate['shareToken']}").status_code == 200
    assert client.get(f"/referral/{advocate['shareToken']}").status_code == 429


def test_body_cap(client, advocate):
    big = json.dumps(FRIEND | {"lastName": "x" * (256 * 1024)})
    response = client.post(f"/referral/{advocate['shareToken']}/submit", big, content_type="application/json")
    assert response.status_code == 413
    assert not Referral.objects.unscoped().exists()


def test_submit_not_stored_answers_503(client, owner, advocate):
    def refuse(execute, sql, params, many, context):
        if "INSERT" in sql.upper():
            from django.db import OperationalError

            raise OperationalError("storage outage")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(refuse):
        response = submit(client, advocate["shareToken"])
    body = assert_error(response, 503, "REFERRAL_NOT_STORED")
    assert body and int(response["Retry-After"]) >= 1
    assert not Referral.objects.unscoped().exists()
    assert not Patient.objects.for_org(owner.organization).filter(email="bob@example.com").exists()
