"""The settings routes' JSON: camelCase like every route, except inside fieldMapping, whose keys are the sender's
own field names ("your_email", "firstName", "Phone Number") and must round-trip exactly as written."""

from apps.core.parsers import CamelCaseStrictJSONParser
from apps.core.renderers import CamelCaseJSONRenderer

VERBATIM = ("field_mapping", "fieldMapping")


class MappingJSONParser(CamelCaseStrictJSONParser):
    def underscoreize_options(self) -> dict:
        options = dict(super().underscoreize_options())
        options["ignore_fields"] = (*(options.get("ignore_fields") or ()), *VERBATIM)
        return options


class MappingJSONRenderer(CamelCaseJSONRenderer):
    ignore_fields = (*CamelCaseJSONRenderer.ignore_fields, *VERBATIM)
