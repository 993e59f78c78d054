from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"

    def ready(self) -> None:
        from django.urls import register_converter

        from apps.core import schema  # noqa: F401  (registers the OpenAPI authentication extensions)
        from apps.core.uuids import UuidParamConverter

        register_converter(UuidParamConverter, "uuid_param")
