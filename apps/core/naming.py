"""snake_case in Python, camelCase on the wire."""

import re

from djangorestframework_camel_case.util import camelize_re, underscore_to_camel


def to_camel(name: str) -> str:
    return re.sub(camelize_re, underscore_to_camel, name)


_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])([A-Z])")


def to_snake(name: str) -> str:
    return _CAMEL_BOUNDARY.sub(r"_\1", name).lower()
