"""Appointments in the practice's diary, and the weekly working hours scheduling offers slots from."""

from datetime import timedelta

from django.conf import settings
from django.contrib.postgres.constraints import ExclusionConstraint
from django.contrib.postgres.fields import RangeOperators
from django.db import models
from django.db.models import F, Func, Q

from apps.core.models import TenantModel


class AppointmentStatus(models.TextChoices):
    BOOKED = "booked"
    CONFIRMED = "confirmed"
    ARRIVED = "arrived"
    COMPLETED = "completed"
    NO_SHOW = "no_show"
    CANCELLED = "cancelled"


# Appointments that hold their practitioner's time: a cancelled one or a no-show frees the slot.
BLOCKING_STATUSES = (
    AppointmentStatus.BOOKED,
    AppointmentStatus.CONFIRMED,
    AppointmentStatus.ARRIVED,
    AppointmentStatus.COMPLETED,
)
# Statuses an appointment can still move from (the others are final).
ACTIVE_STATUSES = (AppointmentStatus.BOOKED, AppointmentStatus.CONFIRMED, AppointmentStatus.ARRIVED)


# The longest an appointment may last (the services refuse longer ones; reads use it to bound range scans).
MAX_LENGTH = timedelta(hours=12)


class AppointmentType(models.TextChoices):
    CONSULTATION = "consultation"
    TREATMENT = "treatment"
    HYGIENE = "hygiene"
    REVIEW = "review"
    EMERGENCY = "emergency"
    OTHER = "other"


class TsTzRange(Func):
    function = "TSTZRANGE"
    output_field = models.Field()


class Appointment(TenantModel):
    """One booking of a patient with a practitioner. Times are instants (UTC in the database); the practice's
    timezone only decides what "today" and a working day mean. Two appointments that hold time may not overlap
    for one practitioner: the exclusion constraint settles races between concurrent bookings."""

    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    practitioner = models.ForeignKey("patients.Practitioner", on_delete=models.PROTECT, related_name="+")
    location = models.ForeignKey("patients.Location", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    treatment = models.ForeignKey(
        "journeys.Treatment", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    journey = models.ForeignKey("journeys.Journey", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    appointment_type = models.CharField(
        max_length=16, choices=AppointmentType.choices, default=AppointmentType.CONSULTATION
    )
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    status = models.CharField(max_length=16, choices=AppointmentStatus.choices, default=AppointmentStatus.BOOKED)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    cancel_reason = models.CharField(max_length=500, blank=True, default="")
    # Free text for the team; never copied into events or logs.
    notes = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="appointments_ends_after_start"),
            ExclusionConstraint(
                name="appointments_no_double_booking",
                expressions=[
                    ("organization", RangeOperators.EQUAL),
                    ("practitioner", RangeOperators.EQUAL),
                    (TsTzRange("starts_at", "ends_at", models.Value("[)")), RangeOperators.OVERLAPS),
                ],
                condition=Q(status__in=BLOCKING_STATUSES),
            ),
        ]
        indexes = [
            models.Index(fields=["organization", "starts_at"], name="appointments_org_start_idx"),
            models.Index(fields=["organization", "practitioner", "starts_at"], name="appointments_practitioner_idx"),
            models.Index(fields=["organization", "patient", "starts_at"], name="appointments_patient_idx"),
        ]

    def __str__(self) -> str:
        return f"appointment {self.id} ({self.status})"


class WorkingHours(TenantModel):
    """One interval of a practitioner's regular week, in the practice's local time (weekday 0 = Monday)."""

    practitioner = models.ForeignKey("patients.Practitioner", on_delete=models.CASCADE, related_name="+")
    weekday = models.PositiveSmallIntegerField()
    start_time = models.TimeField()
    end_time = models.TimeField()
    location = models.ForeignKey(
        "patients.Location", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(end_time__gt=F("start_time")), name="appointments_hours_end_after_start"
            ),
            models.CheckConstraint(condition=Q(weekday__lte=6), name="appointments_hours_weekday_range"),
        ]
        indexes = [
            models.Index(fields=["organization", "practitioner", "weekday"], name="appointments_hours_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.practitioner_id} day {self.weekday} {self.start_time}-{self.end_time}"
