"""JSON bodies: camelCase on the wire, snake_case in Python."""

import json
from urllib.parse import parse_qsl

from django.conf import settings
from django.core.exceptions import TooManyFieldsSent
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


def strict_form_fields(raw: bytes | str, *, field: str) -> dict[str, list[str]]:
    """application/x-www-form-urlencoded bytes (or a query string) as {name: [values]}, decoded strictly as UTF-8.

    Django decodes invalid bytes into U+FFFD (or the whole body as Latin-1), which would store a lead's name altered;
    JSON bodies refuse such bytes, and so does this: 400 naming the field. Over DATA_UPLOAD_MAX_NUMBER_FIELDS pairs
    raises TooManyFieldsSent, answered 400 TOO_MANY_FIELDS by the error handler.
    """
    from apps.core.errors import ValidationFailed

    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        pairs = parse_qsl(
            text,
            keep_blank_values=True,
            encoding="utf-8",
            errors="strict",
            max_num_fields=settings.DATA_UPLOAD_MAX_NUMBER_FIELDS,
        )
    except UnicodeDecodeError:
        raise ValidationFailed.for_field(field, "is not valid UTF-8") from None
    except ValueError:
        raise TooManyFieldsSent("too many fields") from None
    fields: dict[str, list[str]] = {}
    for name, value in pairs:
        fields.setdefault(name, []).append(value)
    return fields


def refuse_replacement_characters(fields: dict[str, list[str]], *, field: str) -> None:
    """Multipart text fields: Django's parser has already turned invalid UTF-8 into U+FFFD, so that character is
    refused (it marks bytes that were not text) rather than stored in place of what the sender wrote."""
    from apps.core.errors import ValidationFailed

    for name, values in fields.items():
        if "\ufffd" in name or any("\ufffd" in value for value in values):
            raise ValidationFailed.for_field(field, "is not valid UTF-8")
