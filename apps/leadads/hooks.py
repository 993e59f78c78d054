"""Native lead ads' part in erasing and merging a patient (registered in LeadAdsConfig.ready())."""

from django.utils import timezone

from apps.leadads.models import LeadAdSubmission, LeadIntake, PushedLead


def erase_lead_ads_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure: the lead-ad submissions that made or matched these patients hold their answers, and the raw
    intake bodies that carried them too: both go. Pushed-lead records keep no answers; they go with the link."""
    submissions = LeadAdSubmission.objects.for_org(organization).filter(patient_id__in=patient_ids)
    intake_ids = set(submissions.exclude(intake_id=None).values_list("intake_id", flat=True))
    submissions.delete()
    now = timezone.now()
    LeadIntake.objects.filter(id__in=intake_ids).update(raw_encrypted="", erased_at=now, updated_at=now)
    PushedLead.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def repoint_lead_ads_to_survivor(*, organization, survivor, duplicate) -> None:
    for model in (LeadAdSubmission, PushedLead):
        model.objects.for_org(organization).filter(patient_id=duplicate.pk).update(patient_id=survivor.pk)
