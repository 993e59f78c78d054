"""Recalls (a patient due back for a type of visit, reminded through conversations) and the waitlist (patients who
want an earlier slot, offered one when a slot frees)."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import F, Q

from apps.core.models import TenantModel


class RecallType(TenantModel):
    """A kind of recall of one practice: how long after a visit the next is due, which appointment type books it,
    and when reminders go (days relative to the due date: -14 is two weeks before, 0 the day, 14 two weeks after)."""

    name = models.CharField(max_length=80)
    interval_months = models.PositiveSmallIntegerField()
    appointment_type = models.CharField(max_length=16)
    reminder_offsets = ArrayField(models.SmallIntegerField(), default=list, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="recalls_type_name_unique"),
            models.CheckConstraint(
                condition=Q(interval_months__gte=1, interval_months__lte=120), name="recalls_type_interval_range"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class RecallStatus(models.TextChoices):
    DUE = "due"
    BOOKED = "booked"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


OPEN_RECALL_STATUSES = (RecallStatus.DUE, RecallStatus.BOOKED)


class Recall(TenantModel):
    """One patient due back for one recall type. At most one open (due or booked) recall per patient and type.
    `next_reminder_at` is when the reminder sweep next looks at it (null: no reminder left to send)."""

    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    recall_type = models.ForeignKey(RecallType, on_delete=models.PROTECT, related_name="+")
    practitioner = models.ForeignKey(
        "patients.Practitioner", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    due_date = models.DateField()
    status = models.CharField(max_length=16, choices=RecallStatus.choices, default=RecallStatus.DUE)
    appointment = models.ForeignKey(
        "appointments.Appointment", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    next_reminder_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    # The recall this one follows (set when a completed visit made it).
    previous = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "patient", "recall_type"],
                condition=Q(status__in=OPEN_RECALL_STATUSES),
                name="recalls_one_open_per_type",
            ),
        ]
        indexes = [
            models.Index(fields=["organization", "status", "due_date"], name="recalls_org_status_due_idx"),
            models.Index(fields=["organization", "patient"], name="recalls_org_patient_idx"),
            models.Index(
                fields=["next_reminder_at"],
                condition=Q(status=RecallStatus.DUE, next_reminder_at__isnull=False),
                name="recalls_reminder_due_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"recall {self.id} ({self.status}, due {self.due_date})"


class ReminderOutcome(models.TextChoices):
    SENT = "sent"  # queued in the conversations pipeline (its message tracks delivery)
    SKIPPED = "skipped"


class RecallReminder(TenantModel):
    """One attempt at one reminder offset of one recall: never two for the same recall, due date and offset."""

    recall = models.ForeignKey(Recall, on_delete=models.CASCADE, related_name="reminders")
    due_date = models.DateField()  # the due date the reminder was about (a recall set to a new date starts afresh)
    offset_days = models.SmallIntegerField()
    outcome = models.CharField(max_length=8, choices=ReminderOutcome.choices)
    skipped_reason = models.CharField(max_length=40, blank=True, default="")
    channel = models.CharField(max_length=24, blank=True, default="")
    message_id = models.UUIDField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "recall", "due_date", "offset_days"], name="recalls_reminder_once"
            ),
        ]

    def __str__(self) -> str:
        return f"reminder {self.recall_id} {self.offset_days:+d}d {self.outcome}"


class WaitlistStatus(models.TextChoices):
    WAITING = "waiting"
    OFFERED = "offered"
    BOOKED = "booked"
    REMOVED = "removed"


class WaitlistEntry(TenantModel):
    """A patient who wants a slot (earlier than `appointment`, when set). Notes are encrypted at rest (they may say
    why the patient is in a hurry)."""

    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    appointment_type = models.CharField(max_length=16)
    practitioner = models.ForeignKey(
        "patients.Practitioner", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    preferred_days = ArrayField(models.PositiveSmallIntegerField(), default=list, blank=True)  # 0 = Monday
    preferred_from = models.TimeField(null=True, blank=True)  # practice-local clock time
    preferred_until = models.TimeField(null=True, blank=True)
    earliest_date = models.DateField(null=True, blank=True)
    latest_date = models.DateField(null=True, blank=True)
    appointment = models.ForeignKey(
        "appointments.Appointment", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    priority = models.PositiveSmallIntegerField(default=3)  # 1 most urgent … 5
    notes_encrypted = models.TextField(blank=True, default="")
    status = models.CharField(max_length=16, choices=WaitlistStatus.choices, default=WaitlistStatus.WAITING)
    booked_appointment = models.ForeignKey(
        "appointments.Appointment", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(priority__gte=1, priority__lte=5), name="recalls_waitlist_priority"),
            models.CheckConstraint(
                condition=Q(latest_date__isnull=True)
                | Q(earliest_date__isnull=True)
                | Q(latest_date__gte=F("earliest_date")),
                name="recalls_waitlist_dates_ordered",
            ),
        ]
        indexes = [
            models.Index(fields=["organization", "status", "priority", "created_at"], name="recalls_waitlist_idx"),
            models.Index(fields=["organization", "patient"], name="recalls_waitlist_patient_idx"),
        ]

    def __str__(self) -> str:
        return f"waitlist {self.id} ({self.status})"


class OfferStatus(models.TextChoices):
    OPEN = "open"
    ACCEPTED = "accepted"
    DECLINED = "declined"
    EXPIRED = "expired"
    CLOSED = "closed"  # the slot was taken (by another offer or a booking) or the entry left the list


class WaitlistOffer(TenantModel):
    """A freed slot offered to one waitlist entry until `expires_at`. One open offer per entry."""

    entry = models.ForeignKey(WaitlistEntry, on_delete=models.CASCADE, related_name="offers")
    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    practitioner = models.ForeignKey("patients.Practitioner", on_delete=models.CASCADE, related_name="+")
    location = models.ForeignKey(
        "patients.Location", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    appointment_type = models.CharField(max_length=16)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    status = models.CharField(max_length=16, choices=OfferStatus.choices, default=OfferStatus.OPEN)
    closed_reason = models.CharField(max_length=40, blank=True, default="")
    freed_appointment_id = models.UUIDField(null=True, blank=True)  # the appointment whose slot freed (may be gone)
    message_id = models.UUIDField(null=True, blank=True)
    message_skipped_reason = models.CharField(max_length=40, blank=True, default="")
    appointment = models.ForeignKey(
        "appointments.Appointment", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "entry"], condition=Q(status="open"), name="recalls_one_open_offer"
            ),
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="recalls_offer_ends_after_start"),
        ]
        indexes = [
            models.Index(fields=["organization", "status", "expires_at"], name="recalls_offer_status_idx"),
            models.Index(fields=["organization", "practitioner", "starts_at"], name="recalls_offer_slot_idx"),
            models.Index(fields=["expires_at"], condition=Q(status="open"), name="recalls_offer_open_idx"),
        ]

    def __str__(self) -> str:
        return f"offer {self.id} ({self.status})"
