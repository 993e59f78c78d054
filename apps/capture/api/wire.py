"""The settings routes' JSON: camelCase like every route, except inside fieldMapping, whose keys are the sender's
own field names ("your_email", "firstName", "Phone Number") and must round-trip exactly as written."""

import json

from djangorestframework_camel_case.settings import api_settings as camel_settings
from djangorestframework_camel_case.util import underscoreize
from rest_framework.exceptions import ParseError

from apps.core.parsers import CamelCaseStrictJSONParser
from apps.core.renderers import CamelCaseJSONRenderer

VERBATIM = ("field_mapping", "fieldMapping")


def _options() -> dict:
    options = dict(camel_settings.JSON_UNDERSCOREIZE)
    options["ignore_fields"] = (*(options.get("ignore_fields") or ()), *VERBATIM)
    return options


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


class MappingJSONParser(CamelCaseStrictJSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = json.loads(stream.read().decode("utf-8"), parse_constant=_refuse_constant)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"the body is not valid JSON ({exc})") from None
        return underscoreize(data, **_options())


class MappingJSONRenderer(CamelCaseJSONRenderer):
    ignore_fields = (*CamelCaseJSONRenderer.ignore_fields, *VERBATIM)
