"""The outbox events of appointments: appointment.created, .updated (changedFields), .status_changed (action,
previousStatus) and .rescheduled (previous times). Ids, status and times only: the notes and a cancel reason never
reach an event (nor the timeline line), and the actor is the member who acted."""

import json

from apps.patients.models import Activity
from tests.appointments.helpers import (
    appointment_events,
    book,
    iso,
    patch_json,
    post_json,
    url,
)
from tests.factories import LocationFactory

NOTE = "Allergic to latex, very anxious"
REASON = "Funeral of her father"


def test_created_carries_ids_status_and_times(api, owner, patient, practitioner, location):
    created = book(api, patient, practitioner, 0, 1, locationId=str(location.id), notes=NOTE).json()

    (event,) = appointment_events(owner.organization)
    assert event.type == "appointment.created"
    assert event.subject_type == "appointment" and event.subject_id == created["id"]
    assert event.actor_type == "user" and event.actor_id == str(owner.user.id)
    assert event.data == {
        "action": "created",
        "status": "booked",
        "patientId": str(patient.id),
        "practitionerId": str(practitioner.id),
        "locationId": str(location.id),
        "treatmentId": None,
        "startsAt": iso(0),
        "endsAt": iso(1),
    }
    (line,) = Activity.objects.for_org(owner.organization).filter(patient=patient)
    assert line.kind == "appointment_booked"
    assert line.actor_id == owner.user.id
    assert line.data["appointmentId"] == created["id"]


def test_updated_names_the_changed_fields(api, owner, patient, practitioner):
    created = book(api, patient, practitioner).json()
    location = LocationFactory(organization=owner.organization)

    patch_json(api, url(created), {"locationId": str(location.id), "appointmentType": "review", "notes": NOTE})

    event = appointment_events(owner.organization, created, "appointment.updated")[0]
    assert event.data["action"] == "updated"
    assert event.data["changedFields"] == ["locationId", "appointmentType", "notes"]
    assert event.data["locationId"] == str(location.id)
    assert event.actor_id == str(owner.user.id)


def test_status_changed_carries_the_action_and_the_previous_status(api, owner, patient, practitioner):
    created = book(api, patient, practitioner).json()

    post_json(api, url(created, "status"), {"status": "arrived"})

    (event,) = appointment_events(owner.organization, created, "appointment.status_changed")
    assert event.data == {
        "action": "arrived",
        "status": "arrived",
        "previousStatus": "booked",
        "changedFields": ["status", "statusChangedAt"],
        "patientId": str(patient.id),
        "practitionerId": str(practitioner.id),
        "locationId": None,
        "treatmentId": None,
        "startsAt": iso(0),
        "endsAt": iso(0.5),
    }


def test_rescheduled_carries_the_previous_times(api, owner, patient, practitioner):
    created = book(api, patient, practitioner, 0, 1).json()

    post_json(api, url(created, "reschedule"), {"startsAt": iso(26), "endsAt": iso(27.5)})

    (event,) = appointment_events(owner.organization, created, "appointment.rescheduled")
    assert event.data["previousStartsAt"] == iso(0) and event.data["previousEndsAt"] == iso(1)
    assert event.data["startsAt"] == iso(26) and event.data["endsAt"] == iso(27.5)
    assert event.data["changedFields"] == ["startsAt", "endsAt"]
    lines = Activity.objects.for_org(owner.organization).filter(patient=patient).order_by("created_at")
    assert [line.kind for line in lines] == ["appointment_booked", "appointment_rescheduled"]


def test_notes_and_reasons_never_reach_an_event_or_the_timeline(owner, member_factory, patient, practitioner):
    desk = member_factory(role="front_desk", organization=owner.organization)
    client = desk.session_client()
    first = book(client, patient, practitioner, 0, 1, notes=NOTE).json()
    second = book(client, patient, practitioner, 2, 3, notes=NOTE).json()
    patch_json(client, url(first), {"notes": f"{NOTE} (updated)"})
    post_json(client, url(first, "reschedule"), {"startsAt": iso(4), "endsAt": iso(5)})
    post_json(client, url(first, "status"), {"status": "confirmed"})
    post_json(client, url(first, "cancel"), {"reason": REASON})
    post_json(client, url(second, "status"), {"status": "no_show"})

    events = appointment_events(owner.organization)
    assert [event.type for event in events] == [
        "appointment.created",
        "appointment.created",
        "appointment.updated",
        "appointment.rescheduled",
        "appointment.status_changed",
        "appointment.status_changed",
        "appointment.status_changed",
    ]
    for event in events:
        text = json.dumps(event.data)
        assert "Allergic" not in text and "Funeral" not in text, event.type
        assert event.actor_type == "user" and event.actor_id == str(desk.user.id), event.type
    for line in Activity.objects.for_org(owner.organization).filter(patient=patient):
        assert "Allergic" not in json.dumps(line.data) and "Funeral" not in json.dumps(line.data)
        assert line.actor_id == desk.user.id


def test_a_refused_change_records_no_event(api, owner, patient, practitioner):
    created = book(api, patient, practitioner, 0, 1).json()
    book(api, patient, practitioner, 1, 2)
    count = len(appointment_events(owner.organization))

    assert post_json(api, url(created, "reschedule"), {"startsAt": iso(1), "endsAt": iso(2)}).status_code == 409
    assert post_json(api, url(created, "status"), {"status": "completed"}).status_code == 409
    assert book(api, patient, practitioner, 0.5, 1.5).status_code == 409

    assert len(appointment_events(owner.organization)) == count
