"""The notifications area's part in erasing and merging a patient (registered in NotificationsConfig.ready())."""

from django.utils import timezone

from apps.notifications.models import Notification


def erase_notifications_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure: notifications about the patients (their name may be in a title) go with them."""
    Notification.objects.for_org(organization).filter(patient_id__in=list(patient_ids)).delete()


def repoint_notifications_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: notifications about the duplicate now point at the survivor (no event: notifications have none)."""
    rows = Notification.objects.for_org(organization).filter(patient_id=duplicate.pk)
    rows.filter(subject_type="patient", subject_id=str(duplicate.pk)).update(
        subject_id=str(survivor.pk), patient_id=survivor.pk, updated_at=timezone.now()
    )
    rows.update(patient_id=survivor.pk, updated_at=timezone.now())
