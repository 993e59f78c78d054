"""A deposit paid in headless Chromium against the real server and the sandbox payment platform: the patient opens
their link, presses Pay, lands on the sandbox checkout (the deposit page saying no payment was taken), the platform's
signed event arrives (manage.py simulate_payment), and the page then thanks them."""

import pytest
from django.core.management import call_command

from apps.deposits.models import DepositRequest
from tests.browser.conftest import screenshot
from tests.deposits.helpers import connect_account, link_path, make_patient, sent_deposit

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_patient_pays_a_deposit_against_the_sandbox(owner, start_server, page):
    address = start_server(SVC_PAYMENTS_TRANSPORT="sandbox")
    connect_account(owner.organization)
    deposit = sent_deposit(owner.api_client(), make_patient(owner.organization), amount=15000, reason="Implant plan")

    page.goto(f"http://{address}{link_path(deposit)}")
    assert "£150.00" in page.inner_text("body") and "Implant plan" in page.inner_text("body")
    screenshot(page, "deposit-page")
    page.click("button:has-text('Pay deposit')")
    page.wait_for_selector("text=no payment was taken")
    assert page.url.startswith(f"http://{address}{link_path(deposit)}?sandbox=cs_sandbox_")

    call_command("simulate_payment", deposit["id"], "--url", f"http://{address}")
    assert DepositRequest.objects.for_org(owner.organization).get(id=deposit["id"]).status == "paid"
    page.goto(f"http://{address}{link_path(deposit)}")
    page.wait_for_selector("text=your deposit has been paid")
    screenshot(page, "deposit-paid")
