"""The audit app's interface to other apps: import from here, never from its other modules.

`record()` writes one audit entry in the caller's transaction (a rolled-back write leaves no entry). Writes through
the API, the admin and our management commands are recorded by the audit app itself (docs/audit.md); other apps call
`record()` only for work that none of those sees (source=system: background work on someone's behalf).
"""

import ipaddress

from apps.audit.models import AuditEntry

Source = AuditEntry.Source


def address_block(address: str | None) -> str:
    """The network a caller's address belongs to (/24 IPv4, /48 IPv6): where from, without the exact address."""
    if not address:
        return ""
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return ""
    prefix = 24 if ip.version == 4 else 48
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


def record(
    *,
    source: str,
    action: str,
    organization_id=None,
    user_id=None,
    credential_kind: str = "",
    credential_id: str = "",
    oauth_client_id: str = "",
    method: str = "",
    route: str = "",
    subject_type: str = "",
    subject_id: str = "",
    fields=(),
    status_code: int | None = None,
    address: str | None = None,
    written: dict | None = None,
) -> AuditEntry:
    return AuditEntry.objects.create(
        organization_id=organization_id,
        source=source,
        user_id=user_id,
        credential_kind=credential_kind,
        credential_id=str(credential_id or ""),
        oauth_client_id=oauth_client_id or "",
        method=method,
        route=route[:200],
        action=action[:64],
        subject_type=subject_type,
        subject_id=str(subject_id or ""),
        fields=sorted({str(name)[:100] for name in fields}),
        status_code=status_code,
        address_block=address_block(address),
        written=dict(written or {}),
    )


def request_actor(request) -> dict:
    """Who made a request and from where, as record()'s keyword arguments: for entries another app records itself
    (an audited read, such as an export's download), the same who and where the API write entries carry."""
    from apps.audit.middleware import actor_fields

    return actor_fields(getattr(request, "_request", request))


__all__ = ["Source", "address_block", "record", "request_actor"]
