"""The campaigns area's part in erasing and merging a patient (registered in CampaignsConfig.ready())."""

from django.utils import timezone

from apps.campaigns.models import CampaignRecipient, RecipientState


def erase_recipients_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure: the patients' campaign recipient rows go with them, in the erasing transaction."""
    CampaignRecipient.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def skip_recipients_of_duplicate(*, organization, survivor, duplicate) -> None:
    """Merge: a merged-away patient still waiting in a campaign is not sent to (the survivor is a recipient of its
    own when the audience held it; moving the row could message the survivor twice). Released rows keep their
    history on the merged record."""
    CampaignRecipient.objects.for_org(organization).filter(
        patient_id=duplicate.pk, state=RecipientState.PENDING
    ).update(state=RecipientState.SKIPPED, skip_reason="PATIENT_MERGED", updated_at=timezone.now())
