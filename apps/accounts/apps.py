from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"
    verbose_name = "Accounts and practices"

    def ready(self):
        from apps.core.access import AccessBackend, register_access_backend

        from .roles import role_has_permission
        from .selectors import access_generation, resolve_organization

        register_access_backend(
            AccessBackend(
                resolve_organization=resolve_organization,
                role_has_permission=role_has_permission,
                access_generation=access_generation,
            )
        )
