"""The dialer: a practice's telephony account (Telnyx as the reference provider), its phone numbers and porting
orders, the call log (inbound, outbound, missed, voicemail) with its recordings, and the receipts of the provider's
signed callbacks.

A connection's API key is encrypted at rest (core.crypto) and never returned; its Ed25519 public key is not a secret
(it only verifies callbacks). Its routing token is in the webhook URL the practice gives the provider: it picks the
connection and grants nothing by itself (every callback must carry a valid signature of that account)."""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from apps.core.models import TenantModel


class ConnectionStatus(models.TextChoices):
    ACTIVE = "active"
    DISCONNECTED = "disconnected"


class DialerConnection(TenantModel):
    name = models.CharField(max_length=120)
    provider = models.CharField(max_length=32, default="telnyx")
    routing_token = models.CharField(max_length=64, unique=True)
    api_key_encrypted = models.TextField()
    public_key = models.CharField(max_length=64, help_text="Base64 Ed25519 public key that verifies callbacks.")
    # Telnyx's "connection_id": the Call Control application outbound calls and ordered numbers are attached to.
    call_control_app_id = models.CharField(max_length=64, blank=True, default="")
    record_calls = models.BooleanField(default=False)
    # Who gets the follow-up task of a missed call or a voicemail (a member of the practice); unassigned when None.
    missed_call_assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=16, choices=ConnectionStatus.choices, default=ConnectionStatus.ACTIVE)
    disconnected_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["organization", "created_at"], name="dialer_conn_org_idx")]

    def __str__(self) -> str:
        return self.name


class NumberStatus(models.TextChoices):
    PENDING = "pending"  # ordered, the provider has not completed the order yet
    ACTIVE = "active"
    RELEASED = "released"
    PORTED_OUT = "ported_out"
    FAILED = "failed"  # the provider could not complete the order


LIVE_NUMBER_STATUSES = (NumberStatus.PENDING, NumberStatus.ACTIVE)


class NumberSource(models.TextChoices):
    ORDERED = "ordered"
    PORTED = "ported"


class PhoneNumber(TenantModel):
    connection = models.ForeignKey(DialerConnection, on_delete=models.CASCADE, related_name="numbers")
    phone_number = models.CharField(max_length=20, help_text="E.164.")
    status = models.CharField(max_length=16, choices=NumberStatus.choices, default=NumberStatus.ACTIVE)
    source = models.CharField(max_length=16, choices=NumberSource.choices, default=NumberSource.ORDERED)
    provider_number_id = models.CharField(max_length=64, blank=True, default="")
    provider_order_id = models.CharField(max_length=64, blank=True, default="")
    porting_order = models.ForeignKey(
        "dialer.PortingOrder", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    portout_status = models.CharField(max_length=32, blank=True, default="")
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # The callback's "is this number connected here?" and the processing's number lookup.
            models.Index(fields=["organization", "connection", "phone_number"], name="dialer_number_lookup_idx"),
            models.Index(fields=["organization", "created_at"], name="dialer_number_org_idx"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "phone_number"],
                condition=Q(status__in=["pending", "active"]),
                name="dialer_one_live_number",
            )
        ]

    def __str__(self) -> str:
        return self.phone_number


class PortingOrder(TenantModel):
    """A request to bring numbers from another carrier; its status follows the provider's porting events."""

    connection = models.ForeignKey(DialerConnection, on_delete=models.CASCADE, related_name="porting_orders")
    provider_order_id = models.CharField(max_length=64)
    phone_numbers = models.JSONField(default=list)
    # The provider's status value: draft, in-process, submitted, exception, foc-date-confirmed, cancel-pending,
    # ported, cancelled.
    status = models.CharField(max_length=32, default="draft")
    last_event_type = models.CharField(max_length=64, blank=True, default="")
    last_event_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["organization", "created_at"], name="dialer_porting_org_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "connection", "provider_order_id"], name="dialer_porting_unique"
            )
        ]


class Direction(models.TextChoices):
    INBOUND = "inbound"
    OUTBOUND = "outbound"


class CallStatus(models.TextChoices):
    INITIATED = "initiated"
    ANSWERED = "answered"
    COMPLETED = "completed"
    MISSED = "missed"  # inbound, never answered
    NO_ANSWER = "no_answer"  # outbound, never answered
    VOICEMAIL = "voicemail"  # inbound, the caller left a voicemail
    FAILED = "failed"  # outbound, the provider refused or could not place it


FINAL_STATUSES = (CallStatus.COMPLETED, CallStatus.MISSED, CallStatus.NO_ANSWER, CallStatus.VOICEMAIL)


class Call(TenantModel):
    """One call leg of the practice's telephony account, newest first on the log and on the patient's timeline.

    Other areas (AI Voice transcripts and summaries) point at it through apps.dialer.public; whatever they keep about
    a call must cascade with it (a patient's erasure deletes their calls)."""

    connection = models.ForeignKey(DialerConnection, on_delete=models.CASCADE, related_name="+")
    number = models.ForeignKey(PhoneNumber, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    # Erasure deletes the patient's calls through the patients area's hook (apps.dialer.hooks); the cascade is a
    # backstop.
    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    direction = models.CharField(max_length=16, choices=Direction.choices)
    status = models.CharField(max_length=16, choices=CallStatus.choices, default=CallStatus.INITIATED)
    from_number = models.CharField(max_length=32)
    to_number = models.CharField(max_length=32)
    provider_call_leg_id = models.CharField(max_length=128, blank=True, default="")
    provider_call_session_id = models.CharField(max_length=128, blank=True, default="")
    provider_call_control_id = models.CharField(max_length=256, blank=True, default="")
    started_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    duration_seconds = models.PositiveIntegerField(null=True, blank=True, help_text="Talk time: answer to hang-up.")
    hangup_cause = models.CharField(max_length=64, blank=True, default="")
    answered_by = models.CharField(max_length=16, blank=True, default="", help_text="human or machine, if detected.")
    follow_up_task_id = models.UUIDField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(F("organization"), F("started_at").desc(), F("id").desc(), name="dialer_call_log_idx"),
            models.Index(
                F("organization"), F("patient"), F("started_at").desc(), F("id").desc(), name="dialer_call_patient_idx"
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "connection", "provider_call_leg_id"],
                condition=~Q(provider_call_leg_id=""),
                name="dialer_call_leg_unique",
            )
        ]

    def __str__(self) -> str:
        return f"call {self.id} ({self.direction}, {self.status})"


class RecordingKind(models.TextChoices):
    CALL = "call"
    VOICEMAIL = "voicemail"


class RecordingState(models.TextChoices):
    PENDING = "pending"  # being copied from the provider to the practice's storage
    STORED = "stored"
    UNAVAILABLE = "unavailable"  # the copy failed for good


class Recording(TenantModel):
    """A call's recording (or a voicemail), copied from the provider to the media storage by a Celery task and
    served only through GET /calls/{id}/recording."""

    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="recordings")
    kind = models.CharField(max_length=16, choices=RecordingKind.choices, default=RecordingKind.CALL)
    state = models.CharField(max_length=16, choices=RecordingState.choices, default=RecordingState.PENDING)
    provider_recording_id = models.CharField(max_length=128, blank=True, default="")
    # The provider's download link (a capability URL valid for minutes): never returned or logged, cleared once
    # the file is stored.
    provider_url = models.TextField(blank=True, default="")
    storage_name = models.CharField(max_length=300, blank=True, default="")
    content_type = models.CharField(max_length=100, blank=True, default="")
    size = models.PositiveBigIntegerField(null=True, blank=True)
    duration_seconds = models.PositiveIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.CharField(max_length=120, blank=True, default="")
    claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "call", "created_at"], name="dialer_recording_call_idx"),
            models.Index(fields=["created_at"], condition=Q(state="pending"), name="dialer_recording_pending_idx"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "call", "provider_recording_id"],
                condition=~Q(provider_recording_id=""),
                name="dialer_recording_unique",
            )
        ]


class RecordingDeletion(TenantModel):
    """A recording file (and the provider's copy) to delete: written in the erasure's transaction, worked off by a
    Celery task after the commit and by the sweep when that task was lost."""

    storage_name = models.CharField(max_length=300, blank=True, default="")
    connection = models.ForeignKey(DialerConnection, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    provider_recording_id = models.CharField(max_length=128, blank=True, default="")
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["created_at"], name="dialer_recording_del_idx")]


class EventState(models.TextChoices):
    RECEIVED = "received"  # stored, waiting for a worker
    PROCESSED = "processed"
    PARKED = "parked"  # signed, for a number (or porting order) not connected here: kept for review
    FAILED = "failed"  # processing failed for good (the error's type is kept, never its text)
    DISMISSED = "dismissed"  # a parked event the practice decided not to apply


class TelephonyEvent(TenantModel):
    """The durable receipt of one signed callback: written (or found, for a duplicate) before the 200. The event id
    (data.id) is unique per connection, so the provider's retries change nothing. The payload is cleared once
    processed; parked events keep theirs until decided."""

    connection = models.ForeignKey(DialerConnection, on_delete=models.CASCADE, related_name="+")
    event_id = models.CharField(max_length=128)
    event_type = models.CharField(max_length=64)
    payload = models.JSONField(default=dict)
    state = models.CharField(max_length=16, choices=EventState.choices, default=EventState.RECEIVED)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=120, blank=True, default="")
    occurred_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["organization", "connection", "created_at"],
                condition=Q(state="received"),
                name="dialer_event_waiting_idx",
            ),
            models.Index(fields=["created_at"], condition=Q(state="received"), name="dialer_event_sweep_idx"),
            models.Index(
                fields=["organization", "created_at"], condition=Q(state="parked"), name="dialer_event_parked_idx"
            ),
            models.Index(
                fields=["updated_at"],
                condition=Q(state__in=["processed", "failed", "dismissed"]),
                name="dialer_event_done_idx",
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["organization", "connection", "event_id"], name="dialer_event_receipt")
        ]
