"""Campaign test sends (to the sender's own address, with the spec's bucket) and the signed opt-out link
(POST /marketing/unsubscribe/{token}: valid, tampered, replayed; the confirmation page a GET shows)."""

import re

import pytest
from django.utils import timezone

from apps.campaigns import tokens
from apps.campaigns.models import Campaign, MessageTemplate
from apps.campaigns.tasks import release_campaign
from apps.conversations.models import ContactBlock, Message, SandboxDelivery
from apps.patients.models import Activity, MarketingConsent, Patient
from tests.campaigns.conftest import consenting_patient, make_campaign, make_template, post
from tests.factories import PatientFactory
from tests.helpers import assert_error

TOKEN = re.compile(r"/marketing/unsubscribe/(\S+)")

# --- test sends ---------------------------------------------------------------------------------------------------


@pytest.fixture
def verified(owner):
    """E-mail test sends go only to a verified account address."""
    owner.user.email_verified_at = timezone.now()
    owner.user.save(update_fields=["email_verified_at"])
    return owner


@pytest.fixture
def email_campaign(api, email, verified):
    template = make_template(
        api,
        channel="email",
        subject="News for {{patient.first_name}}",
        body="Dear {{patient.first_name}}, the spring offer is on.",
        html="<html><body><p>Dear {{patient.first_name}}</p></body></html>",
    )
    return make_campaign(api, email, template)


def recorded(owner) -> list[dict]:
    """What the sandbox transport recorded of the test sends: the provider requests, oldest first."""
    rows = SandboxDelivery.objects.for_org(owner.organization).filter(message=None).order_by("created_at", "id")
    return [row.request.get("json") or row.request.get("form") for row in rows]


def test_a_test_send_goes_to_the_senders_own_address(
    api, owner, email, email_campaign, django_capture_on_commit_callbacks
):
    owner.user.name = "Laura Bianchi"
    owner.user.save(update_fields=["name"])
    with django_capture_on_commit_callbacks(execute=True):
        response = post(api, f"/campaigns/{email_campaign['id']}/test-send")
    assert response.status_code == 202, response.content
    assert response.json() == {"channel": "email", "to": owner.user.email, "subject": "[Test] News for Laura"}
    # Through the e-mail provider's adapter (Resend's request), as a recipient's message goes.
    (sent,) = recorded(owner)
    assert sent["to"] == [owner.user.email] and sent["subject"] == "[Test] News for Laura"
    assert owner.organization.name in sent["from"]
    assert sent["reply_to"] == email["address"]  # replies reach the practice's inbox
    assert sent["text"].startswith("Dear Laura, the spring offer is on.")
    assert "<p>Dear Laura</p>" in sent["html"]
    unsubscribe = sent["headers"]["List-Unsubscribe"].strip("<>")
    assert sent["headers"]["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    # Its opt-out link works and records nothing (no patient behind it).
    token = unsubscribe.rsplit("/", 1)[1]
    assert post(api, f"/marketing/unsubscribe/{token}").status_code == 200
    assert not MarketingConsent.objects.for_org(owner.organization).exists()
    assert not Message.objects.for_org(owner.organization).exists()  # nothing in any patient's conversation


def test_a_test_send_can_use_a_patients_values(api, owner, email_campaign, django_capture_on_commit_callbacks):
    patient = PatientFactory(organization=owner.organization, first_name="Giulia")
    with django_capture_on_commit_callbacks(execute=True):
        response = post(api, f"/campaigns/{email_campaign['id']}/test-send", {"patientId": str(patient.id)})
    assert response.status_code == 202, response.content
    (sent,) = recorded(owner)
    assert sent["subject"] == "[Test] News for Giulia" and sent["to"] == [owner.user.email]


def test_a_test_send_on_a_phone_channel_goes_to_the_mobile_on_the_senders_profile(
    api, owner, sms, django_capture_on_commit_callbacks
):
    campaign = make_campaign(api, sms, make_template(api))
    body = assert_error(post(api, f"/campaigns/{campaign['id']}/test-send"), 409, "TEST_SEND_ADDRESS_MISSING")
    assert body["details"] == {"channel": "sms", "needed": "mobile number"}
    assert recorded(owner) == []

    owner.user.phone_mobile = "+393470000001"
    owner.user.save(update_fields=["phone_mobile"])
    with django_capture_on_commit_callbacks(execute=True):
        response = post(api, f"/campaigns/{campaign['id']}/test-send")
    assert response.status_code == 202, response.content
    assert response.json()["to"] == "+393470000001"
    (sent,) = recorded(owner)  # Twilio's form, to the sender's own phone
    assert sent["To"] == "+393470000001" and sent["From"] == sms["address"]
    assert sent["Body"].startswith("[Test] ")
    assert not Message.objects.for_org(owner.organization).exists()


def test_test_sends_are_limited_per_sender_per_campaign(api, owner, email, email_campaign, member_factory):
    path = f"/campaigns/{email_campaign['id']}/test-send"
    for _ in range(20):
        assert post(api, path).status_code == 202
    refused = assert_error(post(api, path), 429, "RATE_LIMITED")
    retry_after = int(post(api, path)["Retry-After"])
    assert 1 <= retry_after <= 180  # one token comes back every 3 minutes
    assert refused["details"]["retryAfter"] >= 1

    # Another campaign, and another sender on this one, have buckets of their own.
    other = make_campaign(api, email, make_template(api, channel="email", name="Other", subject="S", body="B"))
    assert post(api, f"/campaigns/{other['id']}/test-send").status_code == 202
    manager = member_factory(role="manager", organization=owner.organization)
    manager.user.email_verified_at = timezone.now()
    manager.user.save(update_fields=["email_verified_at"])
    assert post(manager.api_client(), path).status_code == 202


def test_a_test_send_of_an_unapproved_messaging_template_is_refused(api, messaging):
    template = make_template(
        api,
        channel="messaging_app",
        body="Ciao {{patient.first_name}} {{unsubscribe.link}}",
        providerTemplateName="spring",
        language="it",
    )
    campaign = make_campaign(api, messaging, template)
    assert_error(post(api, f"/campaigns/{campaign['id']}/test-send"), 409, "TEMPLATE_NOT_APPROVED")


def test_an_email_test_send_needs_a_verified_account_address(api, owner, email, django_capture_on_commit_callbacks):
    campaign = make_campaign(api, email, make_template(api, channel="email", subject="News", body="Hi"))
    body = assert_error(post(api, f"/campaigns/{campaign['id']}/test-send"), 409, "TEST_SEND_ADDRESS_UNVERIFIED")
    assert body["details"] == {"channel": "email", "needed": "verified e-mail address"}
    assert recorded(owner) == []
    owner.user.email_verified_at = timezone.now()
    owner.user.save(update_fields=["email_verified_at"])
    with django_capture_on_commit_callbacks(execute=True):
        assert post(api, f"/campaigns/{campaign['id']}/test-send").status_code == 202
    assert len(recorded(owner)) == 1


def test_a_test_send_to_a_blocked_own_number_is_refused(api, owner, sms, django_capture_on_commit_callbacks):
    """The sender's own number sent STOP to the practice: nothing goes to it, test sends included."""
    owner.user.phone_mobile = "+393470000001"
    owner.user.save(update_fields=["phone_mobile"])
    campaign = make_campaign(api, sms, make_template(api))
    block = ContactBlock.objects.create(
        organization=owner.organization, channel="sms", address="+393470000001", reason="stop_keyword"
    )
    body = assert_error(post(api, f"/campaigns/{campaign['id']}/test-send"), 409, "CONTACT_BLOCKED")
    assert body["details"] == {"reason": "CONTACT_BLOCKED", "channel": "sms"}
    assert recorded(owner) == []
    # A block lifted (START) stops nothing.
    block.blocked = False
    block.save(update_fields=["blocked"])
    with django_capture_on_commit_callbacks(execute=True):
        assert post(api, f"/campaigns/{campaign['id']}/test-send").status_code == 202
    assert len(recorded(owner)) == 1


def test_a_test_send_to_a_suppressed_own_address_is_refused(api, owner, outsider, email, email_campaign):
    owner.user.email = "Laura.Bianchi@Example.com"  # an e-mail contact is blocked lower-cased
    owner.user.save(update_fields=["email"])
    ContactBlock.objects.create(
        organization=outsider.organization, channel="email", address="laura.bianchi@example.com", reason="email_bounce"
    )
    sent = post(api, f"/campaigns/{email_campaign['id']}/test-send")  # another practice's block stops nothing
    assert sent.status_code == 202 and sent.json()["to"] == "Laura.Bianchi@Example.com"
    ContactBlock.objects.create(
        organization=owner.organization, channel="email", address="laura.bianchi@example.com", reason="email_bounce"
    )
    body = assert_error(post(api, f"/campaigns/{email_campaign['id']}/test-send"), 409, "ADDRESS_SUPPRESSED")
    assert body["details"] == {"reason": "ADDRESS_SUPPRESSED", "channel": "email"}


def test_a_test_send_of_a_template_no_longer_marketing_is_refused(api, owner, email, email_campaign):
    """Checked at every test send of a draft, as at launch: a campaign's message is a marketing one."""
    MessageTemplate.objects.for_org(owner.organization).filter(id=email_campaign["templateId"]).update(
        category="service"
    )
    body = assert_error(post(api, f"/campaigns/{email_campaign['id']}/test-send"), 409, "CAMPAIGN_NOT_READY")
    assert body["details"]["field"] == "templateId"


def test_a_test_send_of_a_launched_campaign_always_carries_the_opt_out_link(
    api, owner, sms, django_capture_on_commit_callbacks
):
    owner.user.phone_mobile = "+393470000001"
    owner.user.save(update_fields=["phone_mobile"])
    campaign = make_campaign(api, sms, make_template(api))
    post(api, f"/campaigns/{campaign['id']}/launch")
    stored = Campaign.objects.for_org(owner.organization).get(id=campaign["id"])
    stored.content = {**stored.content, "category": "service"}  # launched before launch checked the category
    stored.save(update_fields=["content"])
    with django_capture_on_commit_callbacks(execute=True):
        assert post(api, f"/campaigns/{campaign['id']}/test-send").status_code == 202
    (sent,) = recorded(owner)
    assert "Opt out: " in sent["Body"] and "/marketing/unsubscribe/" in sent["Body"]


# --- opt-out links ------------------------------------------------------------------------------------------------


@pytest.fixture
def sent(api, owner, sms):
    """A campaign released to one consenting patient: (campaign, patient, the opt-out token in their message)."""
    patient = consenting_patient(owner.organization, "sms")
    campaign = make_campaign(api, sms, make_template(api))
    post(api, f"/campaigns/{campaign['id']}/launch")
    release_campaign(campaign["id"])
    message = Message.objects.for_org(owner.organization).get(source="campaign")
    return campaign, patient, TOKEN.search(message.body).group(1)


def consents(patient) -> list:
    return list(
        MarketingConsent.objects.for_org(patient.organization_id).filter(patient=patient).order_by("recorded_at", "id")
    )


def test_the_opt_out_link_records_the_withdrawal_with_evidence(client, api, owner, sent):
    campaign, patient, token = sent
    response = client.post(f"/marketing/unsubscribe/{token}")
    assert response.status_code == 200, response.content
    assert response.json() == {"unsubscribed": True, "channel": "sms"}

    withdrawal = consents(patient)[-1]
    assert (withdrawal.channel, withdrawal.status, withdrawal.source) == ("sms", "withdrawn", "unsubscribe_link")
    assert campaign["id"] in withdrawal.evidence and tokens.digest(token) in withdrawal.evidence
    assert token not in withdrawal.evidence
    assert Patient.objects.for_org(owner.organization).get(id=patient.id).sms_opt_out is True
    assert Activity.objects.for_org(owner.organization).filter(patient=patient, kind="consent").exists()

    detail = api.get(f"/campaigns/{campaign['id']}").json()
    assert detail["totals"]["unsubscribed"] == 1 and detail["totals"]["queued"] == 0
    (row,) = api.get(f"/campaigns/{campaign['id']}/recipients?status=unsubscribed").json()["items"]
    assert row["patientId"] == str(patient.id) and row["unsubscribedAt"] is not None


def test_a_replayed_token_answers_200_and_records_nothing_new(client, owner, sent):
    _, patient, token = sent
    assert client.post(f"/marketing/unsubscribe/{token}").status_code == 200
    before = consents(patient)
    again = client.post(f"/marketing/unsubscribe/{token}")
    assert again.status_code == 200 and again.json() == {"unsubscribed": True, "channel": "sms"}
    assert consents(patient) == before


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # signature changed
        lambda t: ("B" if t[0] != "B" else "C") + t[1:],  # payload changed
        lambda t: t.split(":")[0],  # no signature
        lambda t: t[:20],
        lambda t: "not-a-token",
    ],
)
def test_a_tampered_token_is_404_and_records_nothing(client, owner, sent, mangle):
    _, patient, token = sent
    before = consents(patient)
    response = client.post(f"/marketing/unsubscribe/{mangle(token)}")
    assert_error(response, 404, "NOT_FOUND")
    assert consents(patient) == before
    assert Patient.objects.for_org(owner.organization).get(id=patient.id).sms_opt_out is False


def test_a_token_signed_for_something_else_is_404(client, sent, settings):
    from django.core import signing

    token = sent[2]
    payload = token.split(":")[0]
    foreign = signing.Signer(salt="another.purpose", algorithm="sha256").sign(payload)
    assert_error(client.post(f"/marketing/unsubscribe/{foreign}"), 404, "NOT_FOUND")
    settings.SECRET_KEY = "a-different-secret-key-for-this-test-only-0123456789"
    assert_error(client.post(f"/marketing/unsubscribe/{token}"), 404, "NOT_FOUND")


def test_a_mail_clients_one_click_post_is_accepted(client, owner, sent):
    _, patient, token = sent
    response = client.post(
        f"/marketing/unsubscribe/{token}",
        "List-Unsubscribe=One-Click",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 200, response.content
    assert consents(patient)[-1].status == "withdrawn"


def test_opening_the_link_shows_a_confirmation_page_that_records_nothing(client, owner, sent):
    _, patient, token = sent
    page = client.get(f"/marketing/unsubscribe/{token}", headers={"Accept": "text/html"})
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    html = page.content.decode()
    assert owner.organization.name in html and "text messages" in html
    assert f'action="/marketing/unsubscribe/{token}"' in html and 'method="post"' in html
    assert "default-src 'none'" in page["Content-Security-Policy"] and page["Cache-Control"] == "no-store"
    assert consents(patient)[-1].status == "granted"

    done = client.post(
        f"/marketing/unsubscribe/{token}", "", content_type="application/x-www-form-urlencoded",
        headers={"Accept": "text/html"},
    )  # fmt: skip
    assert done.status_code == 200 and "You are unsubscribed" in done.content.decode()
    assert consents(patient)[-1].status == "withdrawn"


def test_a_bad_link_opened_in_a_browser_is_a_page(client, sent):
    _, _, token = sent
    page = client.get(f"/marketing/unsubscribe/{token}x", headers={"Accept": "text/html"})
    assert page.status_code == 404 and "not valid" in page.content.decode()
    posted = client.post(f"/marketing/unsubscribe/{token}x", "", content_type="application/x-www-form-urlencoded",
                         headers={"Accept": "text/html"})  # fmt: skip
    assert posted.status_code == 404 and posted["Content-Type"].startswith("text/html")
    assert_error(client.get(f"/marketing/unsubscribe/{token}x"), 404, "NOT_FOUND")


def test_the_link_of_a_template_sent_outside_a_campaign_works(
    client, api, owner, sms, django_capture_on_commit_callbacks
):
    patient = consenting_patient(owner.organization, "sms")
    template = make_template(api)
    with django_capture_on_commit_callbacks(execute=True):
        post(api, f"/templates/{template['id']}/send", {"patientId": str(patient.id), "connectionId": sms["id"]})
    token = TOKEN.search(Message.objects.for_org(owner.organization).get().body).group(1)
    assert client.post(f"/marketing/unsubscribe/{token}").status_code == 200
    withdrawal = consents(patient)[-1]
    assert withdrawal.status == "withdrawn" and "a message sent from a template" in withdrawal.evidence


def test_an_opt_out_of_a_merged_patient_lands_on_the_survivor(client, api, owner, sent):
    _, patient, token = sent
    survivor = consenting_patient(owner.organization, "sms")
    assert post(api, f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(patient.id)}).status_code == 200
    assert client.post(f"/marketing/unsubscribe/{token}").status_code == 200
    assert consents(survivor)[-1].status == "withdrawn"


def test_an_erased_patients_link_answers_200_and_records_nothing(client, api, owner, sent):
    _, patient, token = sent
    assert api.delete(f"/patients/{patient.id}").status_code == 200
    assert client.post(f"/marketing/unsubscribe/{token}").status_code == 200
    assert not MarketingConsent.objects.for_org(owner.organization).exists()


def test_the_opt_out_route_needs_no_credential_and_ignores_one(owner, outsider, sent):
    _, patient, token = sent
    # A signed-in member of another practice posting the link changes nothing about who it is for.
    response = outsider.api_client().post(f"/marketing/unsubscribe/{token}")
    assert response.status_code == 200
    assert (
        consents(patient)[-1].status == "withdrawn" and consents(patient)[-1].organization_id == owner.organization.id
    )
