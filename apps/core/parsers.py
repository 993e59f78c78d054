"""JSON bodies: camelCase on the wire, snake_case in Python."""

import json

from djangorestframework_camel_case.settings import api_settings as camel_settings
from djangorestframework_camel_case.util import underscoreize
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


class CamelCaseStrictJSONParser(JSONParser):
    """Strict UTF-8 JSON (no NaN/Infinity: they cannot round-trip through jsonb), keys turned to snake_case
    except inside fields listed in JSON_CAMEL_CASE ignore_fields (free-form objects such as customFields)."""

    def underscoreize_options(self) -> dict:
        return camel_settings.JSON_UNDERSCOREIZE

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            text = stream.read().decode("utf-8")
            data = json.loads(text, parse_constant=_refuse_constant)
            return underscoreize(data, **self.underscoreize_options())
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"the body is not valid JSON ({exc})") from None
        except RecursionError:
            raise ParseError("the body is nested too deeply") from None
