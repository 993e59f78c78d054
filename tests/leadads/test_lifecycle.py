"""What happens to lead-ad data over time: patient erasure and merge, the intake's retention, and an operator's
replay of a parked body once its page is connected."""

from datetime import timedelta

from django.utils import timezone

from apps.leadads import intake as intake_service
from apps.leadads import tasks
from apps.leadads.models import LeadAdSubmission, LeadIntake, PushedLead
from apps.patients import services as patient_services
from apps.patients.models import Patient
from tests.leadads.conftest import (
    intake_of,
    make_connection,
    post_json,
    post_short_video,
    process_all,
    short_video_lead,
)


def test_erasing_a_patient_erases_their_submissions_and_raw_bodies(api, owner, client, short_video):
    post_short_video(client, {"leads": [short_video_lead(0), short_video_lead(1)]})
    process_all()
    post_json(api, "/leads", {"email": "video0@example.com"})
    erased = LeadAdSubmission.objects.for_org(owner.organization).get(lead_ref="tt-0")
    patient = Patient.objects.for_org(owner.organization).get(id=erased.patient_id)

    patient_services.patient_erase(organization=owner.organization, patient=patient)

    assert list(LeadAdSubmission.objects.for_org(owner.organization).values_list("lead_ref", flat=True)) == ["tt-1"]
    body = LeadIntake.objects.get()
    assert body.raw_encrypted == "" and body.erased_at is not None
    assert not PushedLead.objects.for_org(owner.organization).exists()


def test_merging_moves_submissions_to_the_survivor(owner, client, short_video):
    post_short_video(client, {"leads": [short_video_lead(0), short_video_lead(1)]})
    process_all()
    first, second = (
        LeadAdSubmission.objects.for_org(owner.organization).get(lead_ref=ref).patient for ref in ("tt-0", "tt-1")
    )
    patient_services.patient_merge(organization=owner.organization, user=owner.user, survivor=first, duplicate=second)
    assert set(LeadAdSubmission.objects.for_org(owner.organization).values_list("patient_id", flat=True)) == {first.id}


def test_raw_bodies_are_erased_after_a_week_and_rows_after_30_days(owner, client, short_video, time_machine):
    intake = intake_of(post_short_video(client, {"leads": [short_video_lead(0)]}))
    parked = intake_of(post_short_video(client, {"leads": [short_video_lead(1, advertiser_id="999")]}))
    process_all()
    time_machine.move_to(timezone.now() + timedelta(days=8))
    tasks.sweep()
    assert LeadIntake.objects.get(id=intake.id).raw_encrypted == ""
    assert LeadIntake.objects.get(id=parked.id).raw_encrypted == ""
    time_machine.move_to(timezone.now() + timedelta(days=30))
    tasks.sweep()
    assert list(LeadIntake.objects.values_list("id", flat=True)) == [parked.id]  # parked rows wait for a person
    assert LeadAdSubmission.objects.for_org(owner.organization).count() == 1  # the leads stay


def test_a_parked_body_is_replayed_once_its_advertiser_is_connected(api, owner, client):
    parked = intake_of(post_short_video(client, {"leads": [short_video_lead(0)]}))
    assert process_all() == ["parked"]
    make_connection(api, "short_video")
    assert intake_service.replay(intake_id=parked.id) is True
    assert intake_service.replay(intake_id=parked.id) is False  # already waiting
    assert process_all() == ["processed"]
    assert LeadAdSubmission.objects.for_org(owner.organization).get().status == "processed"
    assert LeadIntake.objects.get(id=parked.id).attempts == 1
