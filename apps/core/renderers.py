"""camelCase JSON on the wire, faster: the same output as djangorestframework_camel_case's CamelCaseJSONRenderer
(same key rule, same ignore_fields from settings.JSON_CAMEL_CASE), but each key is converted once per process and
remembered, and scalar values are not walked. The stock camelize runs a regular expression on every key of every
row (a 25-row patient page: about 1,500 substitutions, ~8 ms)."""

import re

from django.utils.encoding import force_str
from django.utils.functional import Promise
from djangorestframework_camel_case.settings import api_settings
from djangorestframework_camel_case.util import camelize_re, underscore_to_camel

_KEYS: dict[str, str] = {}
_KEYS_MAX = 4096  # keys are field names; a bound in case a free-form dict ever reaches here
_SCALARS = (str, int, float, bool, type(None))


def camel_key(key: str) -> str:
    converted = _KEYS.get(key)
    if converted is None:
        converted = re.sub(camelize_re, underscore_to_camel, key) if "_" in key else key
        if len(_KEYS) < _KEYS_MAX:
            _KEYS[key] = converted
    return converted


def camelize(data, ignore_fields=()):
    """djangorestframework_camel_case.util.camelize, for what serializers produce (dicts, lists, scalars)."""
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            if isinstance(key, Promise):
                key = force_str(key)
            new_key = camel_key(key) if isinstance(key, str) else key
            if isinstance(value, _SCALARS) or key in ignore_fields or new_key in ignore_fields:
                out[new_key] = value
            else:
                out[new_key] = camelize(value, ignore_fields)
        return out
    if isinstance(data, (list, tuple)):
        return [item if isinstance(item, _SCALARS) else camelize(item, ignore_fields) for item in data]
    if isinstance(data, Promise):
        return force_str(data)
    if isinstance(data, _SCALARS):
        return data
    try:
        iterator = iter(data)
    except TypeError:
        return data  # UUID, datetime, Decimal, …: the JSON encoder's business
    return [camelize(item, ignore_fields) for item in iterator]


class CamelCaseJSONRenderer(api_settings.RENDERER_CLASS):
    ignore_fields = tuple(api_settings.JSON_UNDERSCOREIZE.get("ignore_fields") or ())

    def render(self, data, *args, **kwargs):
        return super().render(camelize(data, self.ignore_fields), *args, **kwargs)
