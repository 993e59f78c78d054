"""Writes of the agreements area: a practice accepting an agreement version, and platform staff publishing one."""

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from apps.agreements import selectors
from apps.agreements.errors import AgreementAlreadyPublished, AgreementSuperseded
from apps.agreements.models import Agreement, AgreementAcceptance
from apps.audit.public import address_block


@dataclass(frozen=True)
class Accepted:
    acceptance: AgreementAcceptance
    created: bool


def agreement_accept(*, organization, user, agreement: Agreement, address: str | None) -> Accepted:
    """The practice accepts this agreement version (the caller checked agreement:accept: owners alone).

    Only the current version of its kind can be accepted (a superseded one: 409 AGREEMENT_SUPERSEDED naming the
    current one). Accepting a version the practice already accepted changes nothing and answers the first acceptance,
    so a repeat or two owners at once are harmless (the insert skips a conflict on (organization, agreement))."""
    with transaction.atomic():
        current = selectors.current_of_kind(agreement.kind)
        if current is None or current.pk != agreement.pk:
            raise AgreementSuperseded(
                kind=agreement.kind,
                version=agreement.version,
                current_id=current.pk if current else agreement.pk,
                current_version=current.version if current else agreement.version,
            )
        candidate = AgreementAcceptance(
            organization=organization,
            agreement=agreement,
            accepted_by=user,
            accepted_by_name=(user.name or user.email)[:200],
            accepted_at=timezone.now(),
            address_block=address_block(address),
        )
        AgreementAcceptance.objects.bulk_create([candidate], ignore_conflicts=True)
        acceptance = (
            AgreementAcceptance.objects.for_org(organization).select_related("agreement").get(agreement=agreement)
        )
    return Accepted(acceptance, created=acceptance.pk == candidate.pk)


def agreement_publish(*, agreement: Agreement, at=None) -> Agreement:
    """Platform staff publish a draft version (the admin's action). From `at` (default now) it is the current version
    of its kind, so every practice that has not accepted it has it pending; its text is frozen from then on."""
    with transaction.atomic():
        updated = Agreement.objects.filter(pk=agreement.pk, published_at__isnull=True).update(
            published_at=at or timezone.now(), updated_at=timezone.now()
        )
        if not updated:
            raise AgreementAlreadyPublished()
    agreement.refresh_from_db()
    return agreement
