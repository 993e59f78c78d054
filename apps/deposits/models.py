"""Deposits and payments: a deposit request for a patient, the practice's connected payment account (Stripe Connect
as the reference provider), single-use OAuth states of its connection, the receipts of the payment platform's
callbacks and the practice's own subscription state (the billing callback)."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.core.models import TenantModel

# ISO 4217 codes a deposit may be asked in (the payment platform's settlement currencies the practices use).
CURRENCIES = ("gbp", "eur", "usd", "chf", "sek", "nok", "dkk", "pln", "czk", "huf", "ron", "aud", "cad", "nzd")
# Currencies whose deposits are asked in whole units only (the platform still counts them in hundredths).
WHOLE_UNIT_CURRENCIES = frozenset({"huf"})
# 1,000,000.00 in the currency's minor unit: no dental deposit comes near it, and it stays far below the provider's
# own cap (99,999,999 minor units).
MAX_AMOUNT = 100_000_000


class DepositStatus(models.TextChoices):
    DRAFT = "draft"
    SENT = "sent"
    PAID = "paid"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    REFUNDED = "refunded"


class DepositRequest(TenantModel):
    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    journey = models.ForeignKey("journeys.Journey", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    amount = models.PositiveIntegerField(help_text="In the currency's minor unit (pence, cents).")
    currency = models.CharField(max_length=3)
    reason = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=DepositStatus.choices, default=DepositStatus.DRAFT)
    refunded_amount = models.PositiveIntegerField(default=0)
    sent_at = models.DateTimeField(null=True, blank=True)
    link_expires_at = models.DateTimeField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    refunded_at = models.DateTimeField(null=True, blank=True)
    # The payment platform's ids (never in events or on the wire): the last checkout session and its payment.
    checkout_session_id = models.CharField(max_length=255, blank=True, default="")
    payment_intent_id = models.CharField(max_length=255, blank=True, default="")
    # Further payments of an already-paid request (the patient paid twice): kept so their refunds still find the
    # request, never counted as its payment (the first one is).
    extra_payment_intent_ids = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        indexes = [
            models.Index(fields=["organization", "patient", "created_at"], name="deposits_org_patient_idx"),
            models.Index(fields=["organization", "status", "created_at"], name="deposits_org_status_idx"),
            # Reports (apps.reports): the requests made in a date range.
            models.Index(fields=["organization", "created_at"], name="deposits_org_created_idx"),
            models.Index(fields=["link_expires_at"], condition=Q(status="sent"), name="deposits_sent_expiry_idx"),
            models.Index(fields=["payment_intent_id"], condition=~Q(payment_intent_id=""), name="deposits_pi_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0, amount__lte=MAX_AMOUNT), name="deposits_amount_range"),
            models.CheckConstraint(condition=Q(refunded_amount__lte=models.F("amount")), name="deposits_refund_le"),
        ]

    def __str__(self) -> str:
        return f"deposit request {self.id} ({self.status})"


class AccountStatus(models.TextChoices):
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"


class PaymentAccount(TenantModel):
    """The practice's connected account on the payment platform (one per practice)."""

    account_id = models.CharField(max_length=255)
    status = models.CharField(max_length=16, choices=AccountStatus.choices, default=AccountStatus.CONNECTED)
    charges_enabled = models.BooleanField(default=False)
    payouts_enabled = models.BooleanField(default=False)
    connected_at = models.DateTimeField()
    disconnected_at = models.DateTimeField(null=True, blank=True)
    provider_updated_at = models.IntegerField(
        default=0, help_text="The created time (Unix seconds) of the last account.updated event applied."
    )
    connected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization"], name="deposits_one_account_per_org")]
        indexes = [models.Index(fields=["account_id"], name="deposits_account_id_idx")]


class ConnectState(TenantModel):
    """A single-use OAuth state of a connection attempt: only its SHA-256 is kept; valid 10 minutes."""

    state_hash = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")


class CallbackReceipt(models.Model):
    """A payment-platform event already applied (by event id, per endpoint): a replay changes nothing."""

    endpoint = models.CharField(max_length=16)  # connect or billing
    event_id = models.CharField(max_length=255)
    event_type = models.CharField(max_length=100)
    received_at = models.DateTimeField(auto_now_add=True)
    # A payment event that names no deposit request we know yet (its payment arrived first): kept, with the payment's
    # id and the provider's object, until a later event links that payment to a request; then applied and cleared.
    pending_payment_intent = models.CharField(max_length=255, blank=True, default="")
    pending_object = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "event_id"], name="deposits_receipt_unique"),
        ]
        indexes = [
            models.Index(
                fields=["pending_payment_intent"],
                condition=~Q(pending_payment_intent=""),
                name="deposits_receipt_pending_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.endpoint} event {self.event_id}"


class Subscription(TenantModel):
    """The practice's own subscription with the platform (the billing callback keeps it current)."""

    customer_id = models.CharField(max_length=255, blank=True, default="")
    subscription_id = models.CharField(max_length=255, blank=True, default="")
    plan = models.CharField(max_length=100, blank=True, default="")
    status = models.CharField(max_length=32, blank=True, default="")
    current_period_end = models.DateTimeField(null=True, blank=True)
    provider_updated_at = models.IntegerField(default=0, help_text="The event's created time (Unix seconds).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization"], name="deposits_one_subscription_per_org")]
