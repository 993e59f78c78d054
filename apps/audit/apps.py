"""The audit log: who changed what, when and from where, through the API, the admin and management commands. Append-
only; read by owners and managers.
"""

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "apps.audit"
    label = "audit"
    verbose_name = "Audit log"

    def ready(self) -> None:
        # Recording only (no business rule): the admin's log hooks and our commands' runs (apps/audit/hooks.py).
        from apps.audit import hooks

        hooks.install_admin_hooks()
        hooks.install_command_hook()
