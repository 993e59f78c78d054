"""The clinical hub's part in erasing and merging a patient (registered in ClinicalConfig.ready()).

Erasing: the patient's documents are deleted in the erasure's transaction and their files once it commits; the
visits (chair, arrival) of their appointments are deleted too (the appointments go with the patient).
Merging: the duplicate's documents move to the survivor (no event: the catalogue has none for documents); visits
follow their appointments, which the appointments app moves."""

from django.utils import timezone

from apps.appointments.public import Appointment
from apps.clinical import documents
from apps.clinical.models import AppointmentVisit, ClinicalDocument


def erase_clinical_rows_of_patients(*, organization, patient_ids: list) -> None:
    rows = ClinicalDocument.objects.for_org(organization).filter(patient_id__in=patient_ids)
    names = list(rows.values_list("storage_name", flat=True))
    rows.delete()
    documents.delete_after_commit(names)
    appointments = Appointment.objects.for_org(organization).filter(patient_id__in=patient_ids).values("id")
    AppointmentVisit.objects.for_org(organization).filter(appointment_id__in=appointments).delete()


def repoint_clinical_rows_to_survivor(*, organization, survivor, duplicate) -> None:
    ClinicalDocument.objects.for_org(organization).filter(patient_id=duplicate.pk).update(
        patient_id=survivor.pk, updated_at=timezone.now()
    )
