"""Records for the Today tests, written straight to the tables (the areas' own tests cover their services)."""

from datetime import datetime, timedelta

from apps.appointments.models import Appointment
from apps.journeys import services as journey_services
from apps.journeys.models import Journey
from apps.patients.models import Patient
from apps.tasks.models import Task
from tests.factories import PatientFactory, PractitionerFactory


def make_task(organization, **fields) -> Task:
    fields.setdefault("title", "Call back about the quote")
    return Task.objects.create(organization=organization, **fields)


def make_appointment(organization, starts_at: datetime, *, minutes: int = 30, **fields) -> Appointment:
    fields.setdefault("patient", PatientFactory(organization=organization, status="patient"))
    fields.setdefault("practitioner", PractitionerFactory(organization=organization))
    return Appointment.objects.create(
        organization=organization, starts_at=starts_at, ends_at=starts_at + timedelta(minutes=minutes), **fields
    )


def make_lead(organization, created_at: datetime, **fields) -> Patient:
    patient = PatientFactory(organization=organization, **fields)
    Patient.objects.for_org(organization).filter(id=patient.id).update(created_at=created_at)
    return patient


def make_journey(organization, *, user, assignee, in_stage_since: datetime, patient=None) -> Journey:
    patient = patient or PatientFactory(organization=organization)
    journey = journey_services.journey_create(
        organization=organization, user=user, data={"patient": patient, "assignee": assignee}
    )
    Journey.objects.for_org(organization).filter(id=journey.id).update(stage_entered_at=in_stage_since)
    return journey
