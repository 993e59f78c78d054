"""The practice's appointments as export rows (apps.transfer's data export and the practice archive)."""

from apps.appointments.models import Appointment

APPOINTMENT_EXPORT_COLUMNS = {  # CSV header → value path
    "id": "id",
    "patientId": "patient_id",
    "practitioner": "practitioner__name",
    "location": "location__name",
    "treatment": "treatment__name",
    "journeyId": "journey_id",
    "appointmentType": "appointment_type",
    "startsAt": "starts_at",
    "endsAt": "ends_at",
    "status": "status",
    "cancelReason": "cancel_reason",
    "notes": "notes",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
}


def appointments_export(*, organization):
    """(header, rows): a values_list queryset in a stable order, to be read through a server-side cursor."""
    rows = (
        Appointment.objects.for_org(organization)
        .order_by("starts_at", "id")
        .values_list(*APPOINTMENT_EXPORT_COLUMNS.values())
    )
    return list(APPOINTMENT_EXPORT_COLUMNS), rows
