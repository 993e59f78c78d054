"""The payment platform's connect callback, applied (POST /webhooks/payments-connect).

Each event is claimed once by its id (CallbackReceipt; a replay changes nothing) and applied in the same transaction.
Events may arrive in any order, so each is applied by reconciling the request with the state of the provider's object
it carries, never by stepping a state machine:

- checkout.session.completed / checkout.session.async_payment_succeeded with payment_status "paid", and
  payment_intent.succeeded: the request is paid (whatever it was before, unless already paid or refunded: the money
  was taken, even for a request cancelled or expired meanwhile); the payment's id is kept. A further payment of an
  already-paid request (paid twice) never replaces it: it is logged (the request's id only) and kept in
  extra_payment_intent_ids, so its refund still finds the request, and changes nothing on it.
- charge.refunded: refunded_amount becomes the charge's cumulative amount_refunded (never lower than what is
  recorded, so an older event arriving late changes nothing); refunded when it covers the amount. A charge also
  proves the payment (with the request's amount and currency, as a payment event must), so a refund arriving before
  the payment's own event still marks the request paid first.
- account.updated: the connected account's charges/payouts flags, unless older (the event's created time) than the
  last one applied; account.application.deauthorized: the practice's account is disconnected (checkouts stop until it
  connects again), unless it was created before the account's current connection.

The events of one payment are applied one at a time (a transaction advisory lock on its payment intent id), so a
refund and its payment's event committing at the same time always see each other.

A payment event must come from the practice's own connected account (the event's `account`), and a checkout's or
payment's amount and currency must be the request's: metadata alone is never trusted, since anyone with a connected
account could write it. A refund naming a payment not yet linked to a request is kept (pending) and applied when a
later event links that payment."""

import logging
import uuid
from typing import Any

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from apps.deposits.models import (
    AccountStatus,
    CallbackReceipt,
    DepositRequest,
    DepositStatus,
    PaymentAccount,
)
from apps.deposits.services import event_data
from apps.events.services import Actor, emit
from apps.patients.public import Activity, timeline_record

logger = logging.getLogger("apps.deposits")

PROVIDER = Actor("provider", "payments")
PAID_EVENTS = ("checkout.session.completed", "checkout.session.async_payment_succeeded", "payment_intent.succeeded")
HANDLED = (*PAID_EVENTS, "charge.refunded", "account.updated", "account.application.deauthorized")


def _text(value: Any, limit: int = 255) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _organization_of_account(account_id: str):
    """The practice whose connected account this is (connected or not any more: late events still reconcile)."""
    if not account_id:
        return None
    account = PaymentAccount.objects.unscoped().filter(account_id=account_id).first()
    return account.organization_id if account is not None else None


def _emit(deposit: DepositRequest, *, action: str, changed: list[str]) -> None:
    emit(
        organization=deposit.organization_id,
        type="deposit_request.status_changed",
        subject_type="deposit_request",
        subject_id=deposit.id,
        actor=PROVIDER,
        data=event_data(deposit),
        action=action,
        changed_fields=changed,
    )


def _timeline(deposit: DepositRequest, kind: str) -> None:
    timeline_record(
        organization=deposit.organization,
        user=None,
        patient_id=deposit.patient_id,
        kind=kind,
        data={
            "depositRequestId": str(deposit.id),
            "amount": deposit.amount,
            "currency": deposit.currency,
            "refundedAmount": deposit.refunded_amount,
            "status": deposit.status,
        },
    )


def _locked(organization_id, *conditions, **lookup) -> DepositRequest | None:
    return DepositRequest.objects.for_org(organization_id).select_for_update().filter(*conditions, **lookup).first()


def _paid_with(organization_id, payment_intent: str) -> DepositRequest | None:
    """The request this payment paid: its own payment, or a further one of an already-paid request."""
    return _locked(
        organization_id, Q(payment_intent_id=payment_intent) | Q(extra_payment_intent_ids__contains=[payment_intent])
    )


def _lock_payment(payment_intent: str) -> None:
    """One event of a payment at a time, to the commit: a refund committing while its payment's event is still open
    would otherwise be kept pending where that event cannot see it (and be lost)."""
    if payment_intent:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", ["pi:" + payment_intent])


def _deposit_from_metadata(organization_id, obj: dict) -> DepositRequest | None:
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    if _text(metadata.get("organization_id"), 64) != str(organization_id):
        return None
    try:
        deposit_id = uuid.UUID(_text(metadata.get("deposit_request_id"), 64))
    except ValueError:  # absent or not a UUID: nothing of ours
        return None
    return _locked(organization_id, id=deposit_id)


def _mark_paid(deposit: DepositRequest, *, payment_intent: str) -> None:
    if payment_intent and not deposit.payment_intent_id:
        deposit.payment_intent_id = payment_intent
    elif payment_intent and payment_intent not in (deposit.payment_intent_id, *deposit.extra_payment_intent_ids):
        # Paid twice: the first payment stays the request's; the further one is kept so its refund finds the request.
        deposit.extra_payment_intent_ids = [*deposit.extra_payment_intent_ids, payment_intent]
        logger.warning("deposit %s paid again by a further payment; the first one is kept", deposit.id)
    if deposit.status in (DepositStatus.PAID, DepositStatus.REFUNDED):
        deposit.save()
        return
    deposit.status = DepositStatus.PAID
    deposit.paid_at = timezone.now()  # the link keeps working until it expires: the patient's page says thank you
    changed = ["status", "paidAt"]
    deposit.save()
    _emit(deposit, action="paid", changed=changed)
    _timeline(deposit, Activity.Kind.DEPOSIT_PAID)


def _record_refund(deposit: DepositRequest, amount_refunded: int) -> None:
    amount_refunded = min(amount_refunded, deposit.amount)
    if amount_refunded <= deposit.refunded_amount:
        return  # an older (or repeated) state of the charge
    deposit.refunded_amount = amount_refunded
    changed = ["refundedAmount"]
    action = "partially_refunded"
    if amount_refunded >= deposit.amount:
        deposit.status = DepositStatus.REFUNDED
        deposit.refunded_at = timezone.now()
        changed = ["status", "refundedAmount", "refundedAt"]
        action = "refunded"
    deposit.save()
    _emit(deposit, action=action, changed=changed)
    _timeline(deposit, Activity.Kind.DEPOSIT_REFUNDED)


def _amount_matches(deposit: DepositRequest, amount: int | None, currency: str) -> bool:
    if amount is None or currency.lower() != deposit.currency or amount < deposit.amount:
        logger.warning("payment event for deposit %s: amount or currency differs; ignored", deposit.id)
        return False
    return True


def _apply_paid(organization_id, event_type: str, obj: dict) -> None:
    if event_type.startswith("checkout.session"):
        if obj.get("payment_status") != "paid":
            return  # an asynchronous method still settling: its own success event follows
        amount, payment_intent = _int(obj.get("amount_total")), _text(obj.get("payment_intent"))
    else:
        if obj.get("status") != "succeeded":
            return
        amount, payment_intent = _int(obj.get("amount_received")), _text(obj.get("id"))
    _lock_payment(payment_intent)
    deposit = _deposit_from_metadata(organization_id, obj)
    if deposit is None and payment_intent:
        deposit = _paid_with(organization_id, payment_intent)
    if deposit is None or not _amount_matches(deposit, amount, _text(obj.get("currency"))):
        return
    _mark_paid(deposit, payment_intent=payment_intent)
    if payment_intent:
        _apply_pending(organization_id, payment_intent, deposit)


def _apply_refund(organization_id, obj: dict, deposit: DepositRequest) -> None:
    payment_intent = _text(obj.get("payment_intent"))
    settled = deposit.status in (DepositStatus.PAID, DepositStatus.REFUNDED)
    if settled and payment_intent and deposit.payment_intent_id and payment_intent != deposit.payment_intent_id:
        _mark_paid(deposit, payment_intent=payment_intent)  # kept among the further payments
        logger.info("refund of a further payment of deposit %s; the request's own payment stands", deposit.id)
        return
    if not settled:
        # The charge proves the payment, but only for the request's amount and currency (as a payment event would).
        proves = obj.get("paid") is True or obj.get("status") == "succeeded"
        if not proves or not _amount_matches(deposit, _int(obj.get("amount")), _text(obj.get("currency"))):
            return
        _mark_paid(deposit, payment_intent=payment_intent)
    amount_refunded = _int(obj.get("amount_refunded"))
    if amount_refunded:
        _record_refund(deposit, amount_refunded)


def _apply_pending(organization_id, payment_intent: str, deposit: DepositRequest) -> None:
    waiting = CallbackReceipt.objects.select_for_update().filter(
        endpoint="connect", pending_payment_intent=payment_intent
    )
    for receipt in waiting:
        obj = receipt.pending_object or {}
        if _organization_of_account(_text(obj.get("_account"))) == organization_id:
            _apply_refund(organization_id, obj, deposit)
        receipt.pending_payment_intent, receipt.pending_object = "", None
        receipt.save(update_fields=["pending_payment_intent", "pending_object"])


def _apply_charge_refunded(organization_id, receipt: CallbackReceipt, obj: dict, account_id: str) -> None:
    if (obj.get("currency") or "") and not isinstance(obj.get("currency"), str):
        return
    payment_intent = _text(obj.get("payment_intent"))
    _lock_payment(payment_intent)
    deposit = _paid_with(organization_id, payment_intent) if payment_intent else None
    if deposit is None:
        deposit = _deposit_from_metadata(organization_id, obj)
    if deposit is None:
        if payment_intent:  # the payment's own event has not arrived yet: keep the charge's state for it
            keys = ("amount", "amount_refunded", "paid", "status", "payment_intent", "currency")
            kept = {key: obj.get(key) for key in keys}
            receipt.pending_payment_intent = payment_intent
            receipt.pending_object = kept | {"_account": account_id}
            receipt.save(update_fields=["pending_payment_intent", "pending_object"])
        return
    if _text(obj.get("currency")).lower() not in ("", deposit.currency):
        return
    _apply_refund(organization_id, obj, deposit)


def _created(event: dict) -> int:
    at = event.get("created")
    return at if isinstance(at, int) and not isinstance(at, bool) and 0 <= at < 2**31 else 0


def _apply_account(event_type: str, account_id: str, obj: dict, *, created: int) -> None:
    """In any order: an account.updated older (by the event's created time) than the one applied changes nothing,
    and a deauthorization from before the account was (re)connected does not disconnect the new connection."""
    accounts = PaymentAccount.objects.unscoped().select_for_update().filter(account_id=account_id)
    now = timezone.now()
    for account in accounts:
        if event_type == "account.application.deauthorized":
            if created < int(account.connected_at.timestamp()):
                continue  # an earlier connection's deauthorization arriving late
            if account.status != AccountStatus.DISCONNECTED:
                account.status, account.disconnected_at = AccountStatus.DISCONNECTED, now
                account.save(update_fields=["status", "disconnected_at", "updated_at"])
        else:
            if created < account.provider_updated_at:
                continue  # an older state of the account than the one applied
            account.charges_enabled = obj.get("charges_enabled") is True
            account.payouts_enabled = obj.get("payouts_enabled") is True
            account.provider_updated_at = created
            account.save(update_fields=["charges_enabled", "payouts_enabled", "provider_updated_at", "updated_at"])


@transaction.atomic
def receive(*, event: dict) -> bool:
    """Claim the event by its id and apply it. False for a replay (already applied; nothing changes)."""
    event_id, event_type = _text(event.get("id")), _text(event.get("type"), 100)
    receipt, created = CallbackReceipt.objects.get_or_create(
        endpoint="connect", event_id=event_id, defaults={"event_type": event_type}
    )
    if not created:
        return False
    data = event.get("data") if isinstance(event.get("data"), dict) else {}
    obj = data.get("object") if isinstance(data.get("object"), dict) else {}
    account_id = _text(event.get("account"))
    if event_type == "account.updated":
        _apply_account(event_type, _text(obj.get("id")) or account_id, obj, created=_created(event))
        return True
    if event_type == "account.application.deauthorized":
        _apply_account(event_type, account_id, obj, created=_created(event))
        return True
    if event_type not in HANDLED:
        return True
    organization_id = _organization_of_account(account_id)
    if organization_id is None:
        logger.info("payment event %s from an account no practice has connected; acknowledged", event_type)
        return True
    if event_type in PAID_EVENTS:
        _apply_paid(organization_id, event_type, obj)
    else:
        _apply_charge_refunded(organization_id, receipt, obj, account_id)
    return True
