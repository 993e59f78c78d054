"""The spec's UUID pattern: versions 1 to 8 with the RFC variant, or the all-zero and all-f forms.

Path segments are matched loosely by the `uuid_param` converter and checked by the base view, so a bad id
answers 400 VALIDATION_ERROR naming the parameter instead of a 404 from the resolver.
"""

import re
import uuid

UUID_PATTERN = (
    r"^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}"
    r"|00000000-0000-0000-0000-000000000000|[fF]{8}-[fF]{4}-[fF]{4}-[fF]{4}-[fF]{12})$"
)
_UUID_RE = re.compile(UUID_PATTERN)
# One or more of them, comma-separated (query parameters such as practitionerIds=<uuid>,<uuid>).
UUID_LIST_PATTERN = f"^{UUID_PATTERN[1:-1]}(?:,{UUID_PATTERN[1:-1]})*$"


def is_valid_uuid(value: object) -> bool:
    return isinstance(value, str) and bool(_UUID_RE.fullmatch(value))


def parse_uuid(value: str) -> uuid.UUID | None:
    return uuid.UUID(value) if is_valid_uuid(value) else None


class InvalidUuid(str):
    """A path segment that was routed but is not a valid UUID; the base view turns it into a 400."""


class UuidParamConverter:
    regex = r"[^/]+"

    def to_python(self, value: str) -> uuid.UUID | InvalidUuid:
        parsed = parse_uuid(value)
        return parsed if parsed is not None else InvalidUuid(value)

    def to_url(self, value) -> str:
        return str(value)
