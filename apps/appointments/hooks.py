"""The appointments area's part in erasing and merging a patient (registered in AppointmentsConfig.ready())."""

from apps.appointments.models import Appointment
from apps.patients.public import repoint_rows_to_survivor


def erase_appointments_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure: the patients' appointments go with them, in the erasing transaction, without events."""
    Appointment.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def repoint_appointments_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's appointments belong to the survivor; one appointment.updated each (one INSERT)."""
    repoint_rows_to_survivor(
        organization=organization, model=Appointment, subject_type="appointment", survivor=survivor, duplicate=duplicate
    )
