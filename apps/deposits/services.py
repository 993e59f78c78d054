"""Writes of the deposits area. Each runs in one transaction and records its event in the outbox.

Events (deposit_request.created, deposit_request.status_changed) carry ids, the status, the amount, the currency and
the refunded amount: never the reason (free text), the patient link or any payment-provider id."""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.core.errors import NotFound, ValidationFailed
from apps.deposits import links, provider
from apps.deposits.errors import DepositTransitionNotAllowed, PaymentsNotConnected
from apps.deposits.models import (
    WHOLE_UNIT_CURRENCIES,
    AccountStatus,
    DepositRequest,
    DepositStatus,
    PaymentAccount,
)
from apps.events.services import Actor, emit
from apps.patients.public import PatientMerged


def _actor(user) -> Actor:
    return Actor.user(user) if user is not None else Actor("provider", "payments")


def event_data(deposit: DepositRequest) -> dict[str, Any]:
    return {
        "status": deposit.status,
        "patientId": str(deposit.patient_id),
        "journeyId": str(deposit.journey_id) if deposit.journey_id else None,
        "amount": deposit.amount,
        "currency": deposit.currency,
        "refundedAmount": deposit.refunded_amount,
    }


def _event(*, organization, actor: Actor, deposit: DepositRequest, type: str, action: str, changed=None) -> None:
    emit(
        organization=organization,
        type=type,
        subject_type="deposit_request",
        subject_id=deposit.id,
        actor=actor,
        data=event_data(deposit),
        action=action,
        changed_fields=changed,
    )


def _check_links(data: dict[str, Any], *, patient=None) -> None:
    patient = data.get("patient", patient)
    if patient is not None and patient.merged_into_id is not None:
        raise PatientMerged(patient.merged_into_id)
    journey = data.get("journey")
    if journey is not None and patient is not None and journey.patient_id != patient.pk:
        raise ValidationFailed.for_field("journeyId", "is a journey of another patient than patientId")


def _check_amount(deposit: DepositRequest) -> None:
    """A currency paid in whole units only (HUF) takes whole amounts: the page shows no decimals for it."""
    if deposit.currency in WHOLE_UNIT_CURRENCIES and deposit.amount % 100:
        raise ValidationFailed.for_field(
            "amount", f"must be a whole number of {deposit.currency.upper()} (a multiple of 100 minor units)"
        )


@transaction.atomic
def deposit_create(*, organization, user, data: dict[str, Any]) -> DepositRequest:
    _check_links(data)
    deposit = DepositRequest(
        organization=organization,
        created_by=user,
        patient=data["patient"],
        journey=data.get("journey"),
        amount=data["amount"],
        currency=data["currency"],
        reason=data["reason"],
    )
    _check_amount(deposit)
    deposit.save(force_insert=True)
    _event(
        organization=organization, actor=_actor(user), deposit=deposit, type="deposit_request.created", action="created"
    )
    return deposit


def _locked(*, organization, deposit_id) -> DepositRequest:
    deposit = DepositRequest.objects.for_org(organization).select_for_update().filter(id=deposit_id).first()
    if deposit is None:
        raise NotFound("No such deposit request.")
    return deposit


EDITABLE = {"amount": "amount", "currency": "currency", "reason": "reason", "journey": "journeyId"}


@transaction.atomic
def deposit_update(*, organization, user, deposit_id, data: dict[str, Any]) -> DepositRequest:
    """A draft's amount, currency, reason or journey (the patient sees a sent request as it was sent)."""
    deposit = _locked(organization=organization, deposit_id=deposit_id)
    if deposit.status != DepositStatus.DRAFT:
        raise DepositTransitionNotAllowed(action="updated", status=deposit.status, allowed_from=[DepositStatus.DRAFT])
    _check_links(data, patient=deposit.patient)
    for field in EDITABLE:
        if field in data:
            setattr(deposit, field, data[field])
    _check_amount(deposit)
    deposit.save()
    return deposit


def _status_change(*, organization, actor: Actor, deposit: DepositRequest, action: str, changed: list[str]) -> None:
    deposit.save()
    _event(
        organization=organization,
        actor=actor,
        deposit=deposit,
        type="deposit_request.status_changed",
        action=action,
        changed=["status", *changed],
    )


def _require(deposit: DepositRequest, action: str, allowed: tuple[str, ...]) -> None:
    if deposit.status not in allowed:
        raise DepositTransitionNotAllowed(action=action, status=deposit.status, allowed_from=[str(s) for s in allowed])


@transaction.atomic
def deposit_send(*, organization, user, deposit_id, valid_days: int | None = None) -> DepositRequest:
    """draft or expired → sent: a new patient link, valid `valid_days` (default 14); an earlier link stops."""
    deposit = _locked(organization=organization, deposit_id=deposit_id)
    _require(deposit, "sent", (DepositStatus.DRAFT, DepositStatus.EXPIRED))
    now = timezone.now()
    days = valid_days or settings.SVC_DEPOSIT_LINK_DAYS
    deposit.status = DepositStatus.SENT
    deposit.sent_at = now
    deposit.link_expires_at = (now + timedelta(days=days)).replace(microsecond=0)
    deposit.expired_at = None
    _status_change(
        organization=organization,
        actor=_actor(user),
        deposit=deposit,
        action="sent",
        changed=["sentAt", "linkExpiresAt"],
    )
    return deposit


@transaction.atomic
def deposit_cancel(*, organization, user, deposit_id) -> DepositRequest:
    """draft, sent or expired → cancelled: its link stops at once. A paid request is refunded at the provider."""
    deposit = _locked(organization=organization, deposit_id=deposit_id)
    _require(deposit, "cancelled", (DepositStatus.DRAFT, DepositStatus.SENT, DepositStatus.EXPIRED))
    deposit.status = DepositStatus.CANCELLED
    deposit.cancelled_at = timezone.now()
    deposit.link_expires_at = None
    _status_change(
        organization=organization,
        actor=_actor(user),
        deposit=deposit,
        action="cancelled",
        changed=["cancelledAt", "linkExpiresAt"],
    )
    return deposit


def expire_due(*, now=None, batch: int = 500) -> int:
    """Sent requests whose link has expired → expired (the beat sweep). Returns how many moved."""
    now = now or timezone.now()
    moved = 0
    with transaction.atomic():
        due = list(
            DepositRequest.objects.unscoped()
            .select_for_update(skip_locked=True)
            .filter(status=DepositStatus.SENT, link_expires_at__lte=now)
            .order_by("link_expires_at")[:batch]
        )
        for deposit in due:
            deposit.status = DepositStatus.EXPIRED
            deposit.expired_at = now
            _status_change(
                organization=deposit.organization_id,
                actor=Actor.system(),
                deposit=deposit,
                action="expired",
                changed=["expiredAt"],
            )
            moved += 1
    return moved


# --- the patient's link: checkout ---------------------------------------------------------------------------------


def deposit_for_link(token: str) -> DepositRequest | None:
    """The deposit request a patient link opens: a verified, unexpired token of the deposit's current link, while
    it is sent (or paid: the page thanks the patient). Anything else is None (404)."""
    link = links.read(token)
    if link is None:
        return None
    deposit = (
        DepositRequest.objects.for_org(link.organization_id)
        .select_related("organization")
        .filter(id=link.deposit_id)
        .first()
    )
    if deposit is None or deposit.link_expires_at != link.expires_at:
        return None
    if deposit.status not in (DepositStatus.SENT, DepositStatus.PAID):
        return None
    return deposit


def connected_account(organization) -> PaymentAccount | None:
    return PaymentAccount.objects.for_org(organization).filter(status=AccountStatus.CONNECTED).first()


def checkout_start(*, deposit: DepositRequest, token: str) -> provider.Checkout:
    """A checkout session for a sent deposit request on the practice's connected account. The provider call is
    idempotent per link (the same link answers the same session); the session's id is kept on the request."""
    if deposit.status != DepositStatus.SENT:
        raise DepositTransitionNotAllowed(action="paid", status=deposit.status, allowed_from=[DepositStatus.SENT])
    account = connected_account(deposit.organization_id)
    if account is None:
        raise PaymentsNotConnected()
    page = links.url(token)
    checkout = provider.transport().checkout(
        provider.CheckoutRequest(
            idempotency_key=f"deposit-{deposit.id}-{int(deposit.link_expires_at.timestamp())}",
            account_id=account.account_id,
            amount=deposit.amount,
            currency=deposit.currency,
            description=f"Deposit: {deposit.reason}"[:200],
            deposit_id=str(deposit.id),
            organization_id=str(deposit.organization_id),
            success_url=f"{page}?paid=1",
            cancel_url=page,
        )
    )
    DepositRequest.objects.for_org(deposit.organization_id).filter(id=deposit.id).update(
        checkout_session_id=checkout.session_id, updated_at=timezone.now()
    )
    return checkout
