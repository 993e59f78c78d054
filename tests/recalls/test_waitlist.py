"""/clinical/waitlist, /clinical/waitlist/{id}, /clinical/waitlist/offers, …/accept, …/decline; a slot freed in the
diary (cancelled, moved away, a no-show marked ahead) offered to matching entries only; offers expiring."""

from datetime import timedelta

from apps.appointments.public import Appointment
from apps.conversations.public import Message
from apps.recalls.models import WaitlistEntry, WaitlistOffer
from apps.recalls.tasks import expire_offers
from tests.factories import PatientFactory, PractitionerFactory
from tests.helpers import assert_error
from tests.recalls.conftest import NOW, book, patch, post

SLOT = NOW + timedelta(days=2)  # Thursday 12 March 2026, 10:00 UTC


def add(client, patient, **fields) -> dict:
    response = post(
        client, "/clinical/waitlist", {"patientId": str(patient.id), "appointmentType": "hygiene", **fields}
    )
    assert response.status_code == 201, response.content
    return response.json()


def cancel(api, appointment, capture):
    with capture(execute=True):
        response = post(api, f"/appointments/{appointment['id']}/cancel", {"reason": "patient ill"})
    assert response.status_code == 200, response.content


def open_offers(client) -> list[dict]:
    response = client.get("/clinical/waitlist/offers")
    assert response.status_code == 200, response.content
    return response.json()["items"]


def test_an_entry_is_added_read_changed_and_removed(client, owner, patient, practitioner, api, clock):
    later = book(api, patient, practitioner, NOW + timedelta(days=30))
    entry = add(
        client,
        patient,
        practitionerId=str(practitioner.id),
        preferredDays=[3, 1, 1],
        preferredFrom="09:00",
        preferredUntil="13:00",
        earliestDate="2026-03-11",
        latestDate="2026-04-30",
        appointmentId=later["id"],
        priority=2,
        notes="Tooth pain, wants sooner",
    )
    assert (
        entry["status"] == "waiting"
        and entry["preferredDays"] == [1, 3]
        and entry["notes"] == "Tooth pain, wants sooner"
    )
    assert entry["preferredFrom"] == "09:00" and entry["appointmentId"] == later["id"]
    stored = WaitlistEntry.objects.for_org(owner.organization).get(id=entry["id"])
    assert "Tooth" not in stored.notes_encrypted  # encrypted at rest

    changed = patch(client, f"/clinical/waitlist/{entry['id']}", {"priority": 1, "notes": None})
    assert changed.status_code == 200, changed.content
    assert changed.json()["priority"] == 1 and changed.json()["notes"] == ""
    assert client.get(f"/clinical/waitlist/{entry['id']}").json()["priority"] == 1
    page = client.get("/clinical/waitlist").json()
    assert page["total"] == 1 and page["items"][0]["id"] == entry["id"]

    removed = client.delete(f"/clinical/waitlist/{entry['id']}")
    assert removed.status_code == 200 and removed.json()["status"] == "removed"
    assert client.get("/clinical/waitlist").json()["total"] == 0
    assert client.get("/clinical/waitlist?status=removed").json()["total"] == 1
    assert_error(patch(client, f"/clinical/waitlist/{entry['id']}", {"priority": 3}), 409, "WAITLIST_ENTRY_CLOSED")


def test_the_list_is_most_urgent_first_and_filters(client, owner, practitioner):
    patients = [PatientFactory(organization=owner.organization) for _ in range(3)]
    normal = add(client, patients[0])
    urgent = add(client, patients[1], priority=1, appointmentType="review")
    mine = add(client, patients[2], practitionerId=str(practitioner.id))
    other = PractitionerFactory(organization=owner.organization)

    def ids(query=""):
        response = client.get(f"/clinical/waitlist{query}")
        assert response.status_code == 200, response.content
        return [item["id"] for item in response.json()["items"]]

    assert ids() == [urgent["id"], normal["id"], mine["id"]]
    assert ids("?appointmentType=review") == [urgent["id"]]
    assert ids(f"?practitionerId={other.id}") == [urgent["id"], normal["id"]]
    assert ids(f"?patientId={patients[2].id}") == [mine["id"]]


def test_bad_input_names_the_field(client, owner, patient, outsider, api, practitioner):
    theirs = PatientFactory(organization=outsider.organization)
    someone_elses = book(api, PatientFactory(organization=owner.organization), practitioner, NOW + timedelta(days=9))
    base = {"patientId": str(patient.id), "appointmentType": "hygiene"}
    for body, field in (
        ({"appointmentType": "hygiene"}, "patientId"),
        ({**base, "patientId": str(theirs.id)}, "patientId"),
        ({**base, "appointmentType": "massage"}, "appointmentType"),
        ({**base, "preferredDays": [7]}, "preferredDays"),
        ({**base, "preferredFrom": "9am"}, "preferredFrom"),
        ({**base, "preferredFrom": "12:00", "preferredUntil": "09:00"}, "preferredUntil"),
        ({**base, "earliestDate": "2026-05-01", "latestDate": "2026-04-01"}, "latestDate"),
        ({**base, "priority": 9}, "priority"),
        ({**base, "appointmentId": someone_elses["id"]}, "appointmentId"),
        ({**base, "notes": "x" * 2001}, "notes"),
        ({**base, "colour": "red"}, "colour"),
    ):
        response = post(client, "/clinical/waitlist", body)
        body_out = assert_error(response, 400, "VALIDATION_ERROR")
        assert field in body_out["details"]["fields"], (field, body_out)
    for query, field in (("?status=later", "status"), (f"?patientId={theirs.id}", "patientId")):
        body_out = assert_error(client.get(f"/clinical/waitlist{query}"), 400, "VALIDATION_ERROR")
        assert field in body_out["details"]["fields"]
    assert_error(client.get("/clinical/waitlist/offers?status=maybe"), 400, "VALIDATION_ERROR")
    assert not WaitlistEntry.objects.for_org(owner.organization).exists()


def test_another_practices_entry_and_offer_are_404_and_unchanged(client, outsider):
    outsider_client = outsider.session_client()
    theirs = add(outsider_client, PatientFactory(organization=outsider.organization))

    assert_error(client.get(f"/clinical/waitlist/{theirs['id']}"), 404, "NOT_FOUND")
    assert_error(patch(client, f"/clinical/waitlist/{theirs['id']}", {"priority": 1}), 404, "NOT_FOUND")
    assert_error(client.delete(f"/clinical/waitlist/{theirs['id']}"), 404, "NOT_FOUND")
    assert_error(post(client, f"/clinical/waitlist/offers/{theirs['id']}/accept"), 404, "NOT_FOUND")
    assert_error(post(client, f"/clinical/waitlist/offers/{theirs['id']}/decline"), 404, "NOT_FOUND")
    stored = WaitlistEntry.objects.for_org(outsider.organization).get(id=theirs["id"])
    assert (stored.status, stored.priority) == ("waiting", 3)


def test_a_cancelled_appointment_is_offered_to_a_matching_entry_only(
    client, api, owner, practitioner, sms, clock, django_capture_on_commit_callbacks
):
    freed = book(api, PatientFactory(organization=owner.organization), practitioner, SLOT)
    matching = add(client, PatientFactory(organization=owner.organization), preferredDays=[3], preferredFrom="09:00")
    wrong_type = add(client, PatientFactory(organization=owner.organization), appointmentType="review")
    wrong_day = add(client, PatientFactory(organization=owner.organization), preferredDays=[0])
    other_doctor = add(
        client,
        PatientFactory(organization=owner.organization),
        practitionerId=str(PractitionerFactory(organization=owner.organization).id),
    )
    too_late = add(client, PatientFactory(organization=owner.organization), preferredUntil="10:15")

    cancel(api, freed, django_capture_on_commit_callbacks)

    offers = open_offers(client)
    assert [offer["entryId"] for offer in offers] == [matching["id"]]
    offer = offers[0]
    assert offer["startsAt"] == "2026-03-12T10:00:00.000000Z" and offer["practitionerId"] == str(practitioner.id)
    assert offer["expiresAt"] == "2026-03-10T12:00:00.000000Z"  # two hours
    message = Message.objects.for_org(owner.organization).get(id=offer["messageId"])
    assert message.purpose == "service" and "Thu 12 Mar at 10:00" in message.body
    assert client.get(f"/clinical/waitlist/{matching['id']}").json()["status"] == "offered"
    for entry in (wrong_type, wrong_day, other_doctor, too_late):
        assert client.get(f"/clinical/waitlist/{entry['id']}").json()["status"] == "waiting"


def test_accepting_books_the_slot_and_moves_the_patient_earlier(
    client, api, owner, practitioner, sms, clock, django_capture_on_commit_callbacks
):
    freed = book(api, PatientFactory(organization=owner.organization), practitioner, SLOT)
    patient = PatientFactory(organization=owner.organization)
    current = book(api, patient, practitioner, NOW + timedelta(days=20))
    entry = add(client, patient, appointmentId=current["id"])
    cancel(api, freed, django_capture_on_commit_callbacks)
    [offer] = open_offers(client)

    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, f"/clinical/waitlist/offers/{offer['id']}/accept")

    assert response.status_code == 200, response.content
    accepted = response.json()
    assert accepted["status"] == "accepted"
    appointment = Appointment.objects.for_org(owner.organization).get(id=accepted["appointmentId"])
    assert (appointment.patient_id, appointment.starts_at, appointment.status) == (patient.id, SLOT, "booked")
    after = client.get(f"/clinical/waitlist/{entry['id']}").json()
    assert after["status"] == "booked" and after["bookedAppointmentId"] == accepted["appointmentId"]
    assert Appointment.objects.for_org(owner.organization).get(id=current["id"]).status == "cancelled"
    assert_error(post(client, f"/clinical/waitlist/offers/{offer['id']}/accept"), 409, "WAITLIST_OFFER_CLOSED")


def test_a_clash_answers_409_and_the_offer_closes(
    client, api, owner, practitioner, sms, clock, django_capture_on_commit_callbacks
):
    freed = book(api, PatientFactory(organization=owner.organization), practitioner, SLOT)
    entry = add(client, PatientFactory(organization=owner.organization))
    cancel(api, freed, django_capture_on_commit_callbacks)
    [offer] = open_offers(client)
    book(api, PatientFactory(organization=owner.organization), practitioner, SLOT + timedelta(minutes=15))

    assert_error(post(client, f"/clinical/waitlist/offers/{offer['id']}/accept"), 409, "APPOINTMENT_CONFLICT")

    closed = WaitlistOffer.objects.for_org(owner.organization).get(id=offer["id"])
    assert (closed.status, closed.closed_reason, closed.appointment_id) == ("closed", "SLOT_TAKEN", None)
    assert client.get(f"/clinical/waitlist/{entry['id']}").json()["status"] == "waiting"
    assert Appointment.objects.for_org(owner.organization).filter(starts_at=SLOT, status="booked").count() == 0


def test_declining_offers_the_slot_to_the_next_entry(
    client, api, owner, practitioner, sms, clock, django_capture_on_commit_callbacks
):
    freed = book(api, PatientFactory(organization=owner.organization), practitioner, SLOT)
    entries = [add(client, PatientFactory(organization=owner.organization), priority=p) for p in (1, 2, 3, 4)]
    cancel(api, freed, django_capture_on_commit_callbacks)
    offers = {o["entryId"]: o for o in open_offers(client)}
    assert sorted(offers) == sorted(e["id"] for e in entries[:3])  # three at a time, the most urgent
    first = offers[entries[0]["id"]]

    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, f"/clinical/waitlist/offers/{first['id']}/decline")

    assert response.status_code == 200 and response.json()["status"] == "declined"
    assert client.get(f"/clinical/waitlist/{entries[0]['id']}").json()["status"] == "waiting"
    assert sorted(o["entryId"] for o in open_offers(client)) == sorted(e["id"] for e in entries[1:])
    assert_error(post(client, f"/clinical/waitlist/offers/{first['id']}/decline"), 409, "WAITLIST_OFFER_CLOSED")


def test_moving_an_appointment_away_and_an_early_no_show_free_the_slot(
    client, api, owner, practitioner, sms, clock, django_capture_on_commit_callbacks
):
    moved = book(api, PatientFactory(organization=owner.organization), practitioner, SLOT)
    missed = book(api, PatientFactory(organization=owner.organization), practitioner, SLOT + timedelta(hours=2))
    morning = add(client, PatientFactory(organization=owner.organization), preferredUntil="11:00")
    midday = add(client, PatientFactory(organization=owner.organization), preferredFrom="11:00")

    with django_capture_on_commit_callbacks(execute=True):
        later = (SLOT + timedelta(days=7)).isoformat()
        ends = (SLOT + timedelta(days=7, minutes=30)).isoformat()
        assert (
            post(api, f"/appointments/{moved['id']}/reschedule", {"startsAt": later, "endsAt": ends}).status_code == 200
        )
    with django_capture_on_commit_callbacks(execute=True):
        assert post(api, f"/appointments/{missed['id']}/status", {"status": "no_show"}).status_code == 200

    offered = sorted((offer["startsAt"], offer["entryId"]) for offer in open_offers(client))
    assert offered == [("2026-03-12T10:00:00.000000Z", morning["id"]), ("2026-03-12T12:00:00.000000Z", midday["id"])]


def test_an_expired_offer_lets_the_entry_wait_again(
    client, api, owner, practitioner, sms, clock, django_capture_on_commit_callbacks
):
    freed = book(api, PatientFactory(organization=owner.organization), practitioner, SLOT)
    entry = add(client, PatientFactory(organization=owner.organization))
    cancel(api, freed, django_capture_on_commit_callbacks)
    [offer] = open_offers(client)

    clock.move_to(NOW + timedelta(hours=3))
    assert expire_offers() == 1
    assert expire_offers() == 0

    assert WaitlistOffer.objects.for_org(owner.organization).get(id=offer["id"]).status == "expired"
    assert client.get(f"/clinical/waitlist/{entry['id']}").json()["status"] == "waiting"
    assert_error(post(client, f"/clinical/waitlist/offers/{offer['id']}/accept"), 409, "WAITLIST_OFFER_CLOSED")
