"""A patient rates their visit in headless Chromium through the hosted review page (/r/{token}) against the real
server: the page shows the practice and the question, the patient picks five stars and sends, and the thank-you page
offers the public review site. A second patient's low rating becomes private feedback."""

import shutil
from pathlib import Path

import pytest

from apps.reputation.models import Feedback, ReviewRequest
from tests.browser.conftest import screenshot
from tests.campaigns.conftest import connect, grant
from tests.factories import LocationFactory, PatientFactory
from tests.reputation.conftest import issue_request, make_source

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_patient_rates_the_visit(owner, start_server, page):
    address = start_server()
    organization = owner.organization
    client = owner.api_client()
    location = LocationFactory(organization=organization, name="High Street")
    make_source(client, location)
    connect(client, "sms", "+390212345678", {"accountSid": "AC" + "0" * 32, "authToken": "browser-sms-token"})
    happy, unhappy = PatientFactory(organization=organization), PatientFactory(organization=organization)
    grant(happy, "sms")
    grant(unhappy, "sms")
    request, token = issue_request(owner, happy, location)

    page.goto(f"http://{address}/r/{token}")
    body = page.inner_text("body")
    assert organization.name in body and "How was your visit?" in body and "High Street" in body
    page.check("input[name=rating][value='5']")
    page.fill("#comment", "Friendly and on time.")
    path = screenshot(page, "review-page")
    shutil.copy(path, Path("/tmp/review_page.png"))
    page.click("button:has-text('Send')")
    page.wait_for_selector("text=Leave a public review")
    screenshot(page, "review-thanks")
    request.refresh_from_db()
    assert (request.status, request.rating) == ("rated", 5)

    _, low_token = issue_request(owner, unhappy, location)
    page.goto(f"http://{address}/r/{low_token}")
    page.check("input[name=rating][value='2']")
    page.fill("#comment", "The waiting room was cold.")
    page.click("button:has-text('Send')")
    page.wait_for_selector("text=privately")
    screenshot(page, "review-feedback")
    assert Feedback.objects.for_org(organization).get().comment == "The waiting room was cold."
    assert ReviewRequest.objects.for_org(organization).filter(status="rated").count() == 2
