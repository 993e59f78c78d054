"""A booking made in headless Chromium through the hosted booking page against the real server: the patient opens
the practice's page, chooses a free time, fills in their details and confirms; the appointment is in the diary. The
practice then asks that patient for a deposit, which they pay through their link (/l/{token}) against the sandbox
payment platform."""

import json

import pytest
from django.core.management import call_command

from apps.appointments.models import Appointment, WorkingHours
from apps.booking.models import BookingHold
from apps.deposits.models import DepositRequest
from apps.patients.models import Patient
from tests.browser.conftest import screenshot
from tests.deposits.helpers import connect_account, link_path, sent_deposit
from tests.factories import LocationFactory, PractitionerFactory

pytestmark = pytest.mark.django_db(transaction=True)


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
        json.dumps({"name": "Book a consultation", "leadTimeMinutes": 60, "horizonDays": 14}),
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
    page.click("#manage-link")
    page.wait_for_selector("text=Your appointment: booked")
    screenshot(page, "booking-manage")

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
