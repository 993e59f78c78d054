"""What an API write is, read from its route: the pattern with {placeholders}, the action, the subject.

Pure functions of the route, the method, the path kwargs and the answer: no database, no request state, so the rules
are tested on their own (tests/audit/test_recording_rules.py) and cost nothing per request beyond string work.
"""

import re
from collections.abc import Iterable, Mapping

_CONVERTER = re.compile(r"<(?:[^>:]+:)?([^>]+)>")
_PLACEHOLDER = re.compile(r"^\{[^}]+\}$")
MAX_FIELDS = 100  # body keys recorded per write (a bulk body's top level is a handful; a stray map is not a list)


def route_pattern(route: str) -> str:
    """Django's matched route ("clinical/notes/<uuid_param:id>/sign") as the contract writes it
    ("/clinical/notes/{id}/sign")."""
    return "/" + _CONVERTER.sub(lambda match: "{" + match.group(1) + "}", route or "").lstrip("/")


def _segments(pattern: str) -> list[str]:
    return [segment for segment in pattern.strip("/").split("/") if segment]


def _is_placeholder(segment: str) -> bool:
    return bool(_PLACEHOLDER.match(segment))


def singular(noun: str) -> str:
    """A collection's segment as a subject type: "booking-pages" → "booking_page", "entries" → "entry"."""
    noun = noun.replace("-", "_")
    if noun.endswith("ies") and len(noun) > 4:
        return noun[:-3] + "y"
    if noun.endswith(("sses", "xes", "ches", "shes")):
        return noun[:-2]
    if noun.endswith("s") and not noun.endswith(("ss", "us")):
        return noun[:-1]
    return noun


def action_of(method: str, pattern: str, status: int) -> str:
    """create / update / delete, or the verb a POST route ends with (/recalls/{id}/cancel → "cancel").

    PUT and PATCH update, DELETE deletes. A POST answered 201 created something. Any other POST is named by its
    last literal segment (cancel, sign, archive, move, test-send, export); a POST ending in an id updates it."""
    if method in ("PUT", "PATCH"):
        return "update"
    if method == "DELETE":
        return "delete"
    if status == 201:
        return "create"
    segments = _segments(pattern)
    if not segments or _is_placeholder(segments[-1]):
        return "update"
    return segments[-1].replace("-", "_")[:64]


def subject_of(
    pattern: str, kwargs: Mapping[str, object], *, action: str, created_id=None, declared: str | None = None
) -> tuple[str, str]:
    """(subject type, subject id) of a write.

    Created: the collection's noun and the new resource's id. Otherwise the last id in the path and the noun just
    before it (/clinical/notes/{id}/amendments/{amendment_id}/sign → amendment, that id); a route without ids names
    its last noun (/settings/booking-pages → booking_page). A view's `audit_subject` overrides the type."""
    segments = _segments(pattern)
    literals = [segment for segment in segments if not _is_placeholder(segment)]
    if action == "create" and created_id is not None:
        noun = _noun_before(segments, len(segments))
        return declared or singular(noun), str(created_id)
    for index in range(len(segments) - 1, -1, -1):
        if _is_placeholder(segments[index]):
            name = segments[index][1:-1]
            value = kwargs.get(name)
            return declared or singular(_noun_before(segments, index)), "" if value is None else str(value)
    noun = literals[-1] if literals else ""
    if action not in ("create", "update", "delete") and len(literals) > 1 and noun.replace("-", "_") == action:
        noun = literals[-2]  # /patients/bulk/archive → the subject is the collection, not the verb
    return declared or singular(noun), ""


def _noun_before(segments: list[str], end: int) -> str:
    """The last literal segment before position `end` (the collection an id or a new resource belongs to)."""
    for segment in reversed(segments[:end]):
        if not _is_placeholder(segment):
            return segment
    return ""


def body_keys(data) -> list[str]:
    """The top-level keys of a parsed body as sent (JSON object keys, form field and file names); never values.
    A JSON array body (a bulk list) or a scalar has no field names."""
    if data is None:
        return []
    keys: Iterable = data.keys() if hasattr(data, "keys") else ()
    names = []
    for key in keys:
        names.append(str(key)[:100])
        if len(names) == MAX_FIELDS:
            break
    return names
