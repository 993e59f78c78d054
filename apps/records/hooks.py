"""Clinical records' part in erasing and merging a patient (registered in RecordsConfig.ready())."""

from django.db.models import F
from django.utils import timezone

from apps.records.models import ClinicalNote, MedicalAlert, MedicalHistory, PatientForm


def erase_records_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure, inside the erasure's transaction: the patients' notes (with their amendments), forms,
    alerts and medical history versions go. (Their clinical documents are clinical storage's, apps.clinical.)"""
    patient_ids = list(patient_ids)
    ClinicalNote.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()
    PatientForm.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()
    MedicalAlert.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()
    MedicalHistory.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def move_records_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's records are the survivor's. Medical history versions are numbered again in the order
    they were taken (both patients' versions interleaved by time), so the newest is still the highest."""
    now = timezone.now()
    for model in (ClinicalNote, PatientForm, MedicalAlert):
        model.objects.for_org(organization).filter(patient_id=duplicate.pk).update(
            patient_id=survivor.pk, updated_at=now
        )
    histories = MedicalHistory.objects.for_org(organization).filter(patient_id__in=[survivor.pk, duplicate.pk])
    if not histories.filter(patient_id=duplicate.pk).exists():
        return
    # Out of the way of the unique (organization, patient, version) first, then 1, 2, … by time.
    histories.update(version=F("version") + 1_000_000)
    ordered = list(histories.order_by("created_at", "id").values_list("id", flat=True))
    for number, entry_id in enumerate(ordered, start=1):
        MedicalHistory.objects.for_org(organization).filter(id=entry_id).update(
            patient_id=survivor.pk, version=number, updated_at=now
        )
    # Only the survivor's newest version's derived alerts stay active.
    newest = ordered[-1]
    MedicalAlert.objects.for_org(organization).filter(
        patient_id=survivor.pk, source="medical_history", resolved_at__isnull=True
    ).exclude(medical_history_id=newest).update(resolved_at=now, updated_at=now)
