"""Reads of the agreements area. Agreements are global; acceptances are read for one practice."""

from dataclasses import dataclass

from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from apps.agreements.models import Agreement, AgreementAcceptance

KIND_ORDER = {kind: position for position, kind in enumerate(Agreement.Kind.values)}


def published_agreements(now=None) -> QuerySet[Agreement]:
    """Every version published so far (current and superseded); drafts and scheduled ones are not."""
    return Agreement.objects.filter(published_at__lte=now or timezone.now())


def _newest_of_each_kind(agreements: QuerySet[Agreement]) -> list[Agreement]:
    """The newest published row of each kind, terms first; one query (PostgreSQL DISTINCT ON kind)."""
    rows = agreements.order_by("kind", "-published_at", "-created_at").distinct("kind")
    return sorted(rows, key=lambda agreement: KIND_ORDER.get(agreement.kind, len(KIND_ORDER)))


def current_agreements(now=None) -> list[Agreement]:
    """The current version of each kind: the newest published one."""
    return _newest_of_each_kind(published_agreements(now))


def current_of_kind(kind: str, now=None) -> Agreement | None:
    return published_agreements(now).filter(kind=kind).order_by("-published_at", "-created_at").first()


def acceptances_by_agreement(*, organization, agreement_ids) -> dict:
    """{agreement id: the practice's acceptance} for these agreements, in one query."""
    rows = AgreementAcceptance.objects.for_org(organization).filter(agreement_id__in=list(agreement_ids))
    return {row.agreement_id: row for row in rows}


@dataclass(frozen=True)
class AgreementState:
    agreement: Agreement
    acceptance: AgreementAcceptance | None
    current: bool

    @property
    def pending(self) -> bool:
        return self.current and self.agreement.requires_acceptance and self.acceptance is None


def current_states(*, organization) -> list[AgreementState]:
    """The current version of each kind with the practice's acceptance of it (two queries)."""
    agreements = current_agreements()
    accepted = acceptances_by_agreement(organization=organization, agreement_ids=[a.id for a in agreements])
    return [AgreementState(a, accepted.get(a.id), current=True) for a in agreements]


def agreement_state(*, organization, agreement: Agreement) -> AgreementState:
    current = current_of_kind(agreement.kind)
    accepted = acceptances_by_agreement(organization=organization, agreement_ids=[agreement.id])
    return AgreementState(
        agreement, accepted.get(agreement.id), current=current is not None and current.pk == agreement.pk
    )


def pending_agreements(organization) -> list[Agreement]:
    """Current versions that need acceptance and that this practice has not accepted, terms first (one query)."""
    accepted = AgreementAcceptance.objects.for_org(organization).filter(agreement_id=OuterRef("pk"))
    rows = _newest_of_each_kind(published_agreements().annotate(accepted=Exists(accepted)))
    return [row for row in rows if row.requires_acceptance and not row.accepted]


def acceptance_history(*, organization) -> QuerySet[AgreementAcceptance]:
    """The practice's acceptances, newest first (the cursor paginator orders them)."""
    return AgreementAcceptance.objects.for_org(organization).select_related("agreement")
