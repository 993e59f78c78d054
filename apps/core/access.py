"""Who may act in which practice: the three questions core's base view and permission class ask of accounts.

`core` imports no app, so `apps.accounts` answers them by registering its functions here in
`AccountsConfig.ready()`: organization resolution for a request, the role → permission check, and the access
generation a browser session reports in its response header. Asking before accounts registered is a programming
error (the app is always installed).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AccessBackend:
    # resolve_organization(*, user, credential, header, session) -> choice with .organization and .membership
    resolve_organization: Callable[..., Any]
    # role_has_permission(role, permission) -> bool
    role_has_permission: Callable[[str, str], bool]
    # access_generation(membership) -> int
    access_generation: Callable[[Any], int]


_backend: AccessBackend | None = None


def register_access_backend(backend: AccessBackend) -> None:
    global _backend
    _backend = backend


def access_backend() -> AccessBackend:
    if _backend is None:
        raise RuntimeError("No access backend registered: apps.accounts must be installed.")
    return _backend
