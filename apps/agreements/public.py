"""The agreements app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: the practice's pending agreements (the setup status in apps.partners and GET /bootstrap):
current versions that need acceptance and that the practice has not accepted yet, terms first.
"""

from apps.agreements.selectors import pending_agreements


def pending_agreement_items(organization) -> list[dict]:
    """pending_agreements as plain items: {id, kind, version, title} (the setup status's pendingAgreements.items)."""
    return [
        {"id": agreement.id, "kind": agreement.kind, "version": agreement.version, "title": agreement.title}
        for agreement in pending_agreements(organization)
    ]


__all__ = ["pending_agreement_items", "pending_agreements"]
