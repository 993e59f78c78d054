"""Online booking: the practice's booking pages (published behind an opaque token) and the short-lived holds a
patient places on a slot before completing the booking."""

from django.contrib.postgres.constraints import ExclusionConstraint
from django.contrib.postgres.fields import RangeOperators
from django.db import models
from django.db.models import F, Func, Q

from apps.core.models import TenantModel

# The marketing-consent wording a booking page shows beside its unticked checkbox (editable per page); the wording
# shown is kept as the consent's evidence.
DEFAULT_CONSENT_TEXT = (
    "Yes, I would like to receive news and offers from the practice by e-mail and text message. "
    "I can withdraw this at any time."
)


class TsTzRange(Func):
    function = "TSTZRANGE"
    output_field = models.Field()


class BookingPage(TenantModel):
    """What a practice offers online: treatments, locations and practitioners (empty = every active one), how soon
    (lead time) and how far ahead (horizon) a patient may book, the slot length, and how close to the appointment a
    patient may still cancel or reschedule, and the marketing-consent wording beside the booking form's unticked
    checkbox. Public behind `token` (rotating it retires the old one at once)."""

    name = models.CharField(max_length=200)
    token = models.CharField(max_length=64, unique=True)
    active = models.BooleanField(default=True)
    treatments = models.ManyToManyField("journeys.Treatment", blank=True, related_name="+")
    locations = models.ManyToManyField("patients.Location", blank=True, related_name="+")
    practitioners = models.ManyToManyField("patients.Practitioner", blank=True, related_name="+")
    lead_time_minutes = models.PositiveIntegerField(default=120)
    horizon_days = models.PositiveIntegerField(default=28)
    slot_minutes = models.PositiveIntegerField(default=30)
    change_notice_minutes = models.PositiveIntegerField(default=1440)
    consent_text = models.TextField(default=DEFAULT_CONSENT_TEXT)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "created_at"], name="booking_page_org_idx")]

    def __str__(self) -> str:
        return f"booking page {self.name}"


class HoldStatus(models.TextChoices):
    ACTIVE = "active"
    COMPLETED = "completed"
    EXPIRED = "expired"


class BookingHold(TenantModel):
    """A slot held for one visitor of a booking page until `expires_at`. Two active holds of one practitioner may not
    overlap: the exclusion constraint (the same shape as the appointments' one) decides races, so of the visitors
    racing for one slot exactly one holds it. An expired hold is marked expired before a new hold of its time is
    written. Completing turns the hold into an appointment (whose own constraint guards the diary) and gives the
    booking its opaque management `uid`; completing again answers the same booking."""

    page = models.ForeignKey(BookingPage, on_delete=models.CASCADE, related_name="holds")
    key = models.CharField(max_length=64, unique=True)
    practitioner = models.ForeignKey("patients.Practitioner", on_delete=models.CASCADE, related_name="+")
    location = models.ForeignKey(
        "patients.Location", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    treatment = models.ForeignKey(
        "journeys.Treatment", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    status = models.CharField(max_length=16, choices=HoldStatus.choices, default=HoldStatus.ACTIVE)
    appointment = models.ForeignKey(
        "appointments.Appointment", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    uid = models.CharField(max_length=64, unique=True, null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="booking_hold_ends_after_start"),
            ExclusionConstraint(
                name="booking_holds_no_overlap",
                expressions=[
                    ("organization", RangeOperators.EQUAL),
                    ("practitioner", RangeOperators.EQUAL),
                    (TsTzRange("starts_at", "ends_at", models.Value("[)")), RangeOperators.OVERLAPS),
                ],
                condition=Q(status="active"),
            ),
        ]
        indexes = [
            models.Index(fields=["organization", "practitioner", "starts_at"], name="booking_hold_slot_idx"),
        ]

    def __str__(self) -> str:
        return f"hold {self.id} ({self.status})"
