"""The hosted capture form in headless Chromium against the real server (capture processing eager): an e-mail the
browser accepts but no lead can use (jane@gmail) is shown next to the field, with what was typed kept and no
thank-you; a phone-only lead is thanked for and becomes a lead."""

import pytest

from apps.capture.models import CaptureSubmission
from apps.patients.models import Patient
from tests.browser.conftest import screenshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_hosted_form_answers_problems_on_the_page_and_takes_phone_only_leads(owner, start_server, page):
    address = start_server(CELERY_TASK_ALWAYS_EAGER="1")
    created = owner.api_client().post(
        "/settings/capture-forms", {"name": "Website", "confirmMapping": True}, content_type="application/json"
    )
    assert created.status_code == 201, created.content
    token = created.json()["captureUrl"].rsplit("/", 1)[1]

    page.goto(f"http://{address}/form-page/{token}?utm_source=newsletter")
    page.fill("#f-first_name", "Jane")
    page.fill("#f-email", "jane@gmail")  # type=email lets it through; no lead could use it
    page.fill("#f-message", "Do you do implants?")
    page.click("button:has-text('Send')")
    page.wait_for_selector("[data-error-for=email]")

    error = page.locator("div.field:has(#f-email) [data-error-for=email]")
    assert error.inner_text() == "Enter a complete e-mail address, like jane@example.com."
    assert page.get_attribute("#f-email", "aria-describedby") == "f-email-error"
    assert "Thank you" not in page.inner_text("body")
    assert page.input_value("#f-first_name") == "Jane" and page.input_value("#f-email") == "jane@gmail"
    assert page.input_value("#f-message") == "Do you do implants?"
    screenshot(page, "hosted-form-error")
    assert not CaptureSubmission.objects.for_org(owner.organization).exists()

    page.fill("#f-email", "")
    page.fill("#f-phone", "+44 7700 900123")  # phone only: the contract allows it
    page.click("button:has-text('Send')")
    page.wait_for_selector("h1:has-text('Thank you')")

    patient = Patient.objects.for_org(owner.organization).get(phone_mobile="+44 7700 900123")
    assert patient.first_name == "Jane"
    [submission] = CaptureSubmission.objects.for_org(owner.organization)
    assert submission.status == CaptureSubmission.Status.PROCESSED
    assert submission.fields["utm_source"] == "newsletter"
