"""The widget's part in erasing and merging a patient (registered in WidgetConfig.ready())."""

from apps.widget.models import Visitor


def erase_visitors_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure: the visitors filed under an erased patient go (their names and contact details with them;
    their tokens stop). The conversations area erases the messages."""
    Visitor.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def repoint_visitors_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's visitors read their threads on the survivor's conversation (merged by conversations)."""
    Visitor.objects.for_org(organization).filter(patient_id=duplicate.pk).update(patient_id=survivor.pk)
