"""A booking made in headless Chromium through the hosted booking page against the real server: the patient opens
the practice's page, chooses a free time, fills in their details, ticks the marketing-consent box and confirms; the
appointment is in the diary and the consent recorded. Through the management link they then move the appointment to
another day and cancel it. The practice then asks that patient for a deposit, which they pay through their link
(/l/{token}) against the sandbox payment platform."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.appointments.models import Appointment, WorkingHours
from apps.booking.models import BookingHold
from apps.deposits.models import DepositRequest
from apps.patients.models import MarketingConsent, Patient
from tests.browser.conftest import screenshot
from tests.deposits.helpers import connect_account, link_path, sent_deposit
from tests.factories import LocationFactory, PractitionerFactory

pytestmark = pytest.mark.django_db(transaction=True)
MANAGE_SCREENSHOT = Path("/tmp/manage_page.png")  # the management page with its actions, for a person to look at


def _open_every_day(organization):
    """One practitioner at one location, working 08:00-18:00 every day (the server runs on the real clock)."""
    location = LocationFactory(organization=organization)
    practitioner = PractitionerFactory(organization=organization)
    for weekday in range(7):
        WorkingHours.objects.create(
            organization=organization,
            practitioner=practitioner,
            weekday=weekday,
            start_time="08:00",
            end_time="18:00",
            location=location,
        )
    return practitioner


def test_a_patient_books_online_and_pays_a_deposit(owner, start_server, page):
    address = start_server(SVC_PAYMENTS_TRANSPORT="sandbox")
    organization = owner.organization
    practitioner = _open_every_day(organization)
    client = owner.api_client()
    response = client.post(
        "/settings/booking-pages",
        json.dumps(
            {"name": "Book a consultation", "leadTimeMinutes": 60, "horizonDays": 14, "changeNoticeMinutes": 60}
        ),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    token = response.json()["token"]

    page.goto(f"http://{address}/booking/{token}")
    assert "Book a consultation" in page.inner_text("body")
    screenshot(page, "booking-page")
    page.click("ul.days li:nth-child(2) a")  # another day, then the first free time of that day
    page.wait_for_selector("ul.slots button")
    page.click("ul.slots li:first-child button")
    page.wait_for_selector("text=We are holding")
    page.fill("#firstName", "Grace")
    page.fill("#lastName", "Hopper")
    page.fill("#email", "grace@example.com")
    page.fill("#phone", "+44 7700 900123")
    assert not page.is_checked("#marketingConsent")  # unticked until the patient ticks it
    page.check("#marketingConsent")
    screenshot(page, "booking-details")
    page.click("button:has-text('Confirm booking')")
    page.wait_for_selector("text=Your appointment is booked")
    screenshot(page, "booking-confirmed")

    hold = BookingHold.objects.for_org(organization).get(page__token=token)
    appointment = Appointment.objects.for_org(organization).get(id=hold.appointment_id)
    patient = Patient.objects.for_org(organization).get(id=appointment.patient_id)
    assert (patient.first_name, patient.email) == ("Grace", "grace@example.com")
    assert appointment.practitioner_id == practitioner.id and appointment.starts_at == hold.starts_at
    assert f"/booking/manage/{hold.uid}" in page.get_attribute("#manage-link", "href")
    consents = MarketingConsent.objects.for_org(organization).filter(patient=patient).order_by("channel")
    assert [(c.channel, c.status, c.source) for c in consents] == [
        ("email", "granted", "booking_page"),
        ("sms", "granted", "booking_page"),
    ]
    assert "Wording shown: Yes, I would like to receive news and offers" in consents[0].evidence

    # The management link: move the appointment to another day, then cancel it.
    page.click("#manage-link")
    page.wait_for_selector("text=Your appointment: booked")
    assert page.is_visible("text=Choose another time") and page.is_visible("button:has-text('Cancel appointment')")
    screenshot(page, "booking-manage")
    page.screenshot(path=str(MANAGE_SCREENSHOT), full_page=True)
    page.click("#choose-time")
    page.wait_for_selector("text=Free times on")
    page.click("ul.days li:nth-child(3) a")  # the day after the booked one
    page.wait_for_selector("ul.slots button")
    screenshot(page, "booking-manage-times")
    page.click("ul.slots li:first-child button")
    page.wait_for_selector("text=Your appointment has been moved to")
    appointment.refresh_from_db()
    assert appointment.starts_at > hold.starts_at and appointment.status == "booked"
    assert appointment.practitioner_id == practitioner.id
    page.check("#confirm")
    page.fill("#reason", "Away that week")
    page.click("button:has-text('Cancel appointment')")
    page.wait_for_selector("text=Your appointment has been cancelled.")
    screenshot(page, "booking-manage-cancelled")
    assert not page.is_visible("button:has-text('Cancel appointment')")
    appointment.refresh_from_db()
    assert (appointment.status, appointment.cancel_reason) == ("cancelled", "Away that week")

    connect_account(organization)
    deposit = sent_deposit(client, patient, amount=5000, reason="Consultation deposit")
    page.goto(f"http://{address}{link_path(deposit)}")
    assert "£50.00" in page.inner_text("body") and "Consultation deposit" in page.inner_text("body")
    page.click("button:has-text('Pay deposit')")
    page.wait_for_selector("text=no payment was taken")
    call_command("simulate_payment", deposit["id"], "--url", f"http://{address}")
    assert DepositRequest.objects.for_org(organization).get(id=deposit["id"]).status == "paid"
    page.goto(f"http://{address}{link_path(deposit)}")
    page.wait_for_selector("text=your deposit has been paid")
    screenshot(page, "booking-deposit-paid")
