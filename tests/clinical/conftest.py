"""Fixtures of the clinical hub's tests: a practice with the clinical workspace, its owner, a dentist and a front
desk member, another practice's owner, and small valid files of each accepted type."""

import json
from datetime import timedelta

import pytest

from apps.appointments.public import Appointment
from tests.conftest import make_member
from tests.factories import LocationFactory, PatientFactory, PractitionerFactory

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)) * 4
PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)
PDF = b"%PDF-1.7\n" + b"1 0 obj << >> endobj\n" * 10 + b"%%EOF\n"
DICOM = bytes(128) + b"DICM" + bytes(64)


def post_json(client, path, data=None, **extra):
    return client.post(path, json.dumps({} if data is None else data), content_type="application/json", **extra)


def patch_json(client, path, data):
    return client.patch(path, json.dumps(data), content_type="application/json")


def make_appointment(org, practitioner, patient, start, minutes=30, **fields):
    """An appointment row as the diary holds it (written directly: these tests are about what reads it)."""
    return Appointment.objects.create(
        organization=org,
        practitioner=practitioner,
        patient=patient,
        starts_at=start,
        ends_at=start + timedelta(minutes=minutes),
        **fields,
    )


@pytest.fixture
def owner(db):
    return make_member(role="owner", clinical_workspace_available=True)


@pytest.fixture
def org(owner):
    return owner.organization


@pytest.fixture
def dentist(owner):
    return make_member(role="dentist", organization=owner.organization)


@pytest.fixture
def front_desk(owner):
    return make_member(role="front_desk", organization=owner.organization)


@pytest.fixture
def outsider(db):
    return make_member(role="owner", clinical_workspace_available=True)


@pytest.fixture
def closed(db):
    """The owner of a practice without the clinical workspace."""
    return make_member(role="owner", clinical_workspace_available=False)


@pytest.fixture
def location(org):
    return LocationFactory(organization=org, name="Centre")


@pytest.fixture
def practitioner(org):
    return PractitionerFactory(organization=org, name="Dr Rossi")


@pytest.fixture
def patient(org):
    return PatientFactory(organization=org, first_name="Anna", last_name="Bianchi")
