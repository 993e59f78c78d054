"""The connected PMS's part in erasing and merging a patient (registered in PmsConfig.ready())."""

from django.db.models import Q
from django.utils import timezone

from apps.patients.public import ErasureResult
from apps.pms.models import PmsConnection, PmsPatientLink, PmsSyncReview
from apps.pms.sync import link_changed


def erase_links_of_patients(*, organization, patient_ids) -> ErasureResult:
    """Right to erasure, inside the erasure's transaction: the patients' PMS links go (pms_patient.link_changed,
    change removed) with every held change about them or their appointments (the incoming content is personal
    data). Mirrored appointments go with the patient (the diary's own cascade), and their links with them."""
    patient_ids = list(patient_ids)
    links = list(PmsPatientLink.objects.for_org(organization).filter(patient_id__in=patient_ids))
    PmsSyncReview.objects.for_org(organization).filter(
        Q(patient_id__in=patient_ids) | Q(appointment__patient_id__in=patient_ids)
    ).delete()
    connections = {
        c.id: c
        for c in PmsConnection.objects.for_org(organization).filter(id__in={link.connection_id for link in links})
    }
    for link in links:
        link_changed(
            connections[link.connection_id],
            link.id,
            patient_id=None,
            previous_patient_id=link.patient_id,
            change="removed",
            key=None,
        )
    PmsPatientLink.objects.for_org(organization).filter(id__in=[link.id for link in links]).delete()
    return ErasureResult()


def repoint_links_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's PMS links (and held changes) now point at the survivor; each moved link records
    pms_patient.link_changed (change moved)."""
    links = list(
        PmsPatientLink.objects.for_org(organization).select_related("connection").filter(patient_id=duplicate.pk)
    )
    now = timezone.now()
    PmsPatientLink.objects.for_org(organization).filter(id__in=[link.id for link in links]).update(
        patient_id=survivor.pk, updated_at=now
    )
    PmsSyncReview.objects.for_org(organization).filter(patient_id=duplicate.pk).update(
        patient_id=survivor.pk, updated_at=now
    )
    for link in links:
        link_changed(
            link.connection, link.id, patient_id=survivor.pk, previous_patient_id=duplicate.pk, change="moved", key=None
        )
