"""Reading a post to POST /capture/{token}: the signed mode's checks over the raw bytes, the public mode's browser
forms, and the flat field dict both hand to the capture service."""

import hashlib
import json
import math
import re
import time
from typing import Any

from apps.capture.errors import SignatureInvalid
from apps.capture.fields import ATTRIBUTION_FIELDS, MAX_FIELD_NAME
from apps.capture.services import Incoming, form_secrets
from apps.core import crypto
from apps.core.errors import ApiError, UnsupportedMediaType, ValidationFailed
from apps.core.parsers import refuse_replacement_characters, strict_form_fields

DELIVERY_HEADER = "X-Service-Delivery-Id"
TIMESTAMP_HEADER = "X-Service-Timestamp"
SIGNATURE_HEADER = "X-Service-Signature"
MAX_DELIVERY_ID = 200
TIMESTAMP_SKEW_SECONDS = 300
MAX_FIELDS = 200
MAX_FILES = 10
MAX_DEPTH = 32
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
# A filled honeypot field marks a bot: the hosted page hides it from people.
HONEYPOT = "_svc_hp"


class TimestampOutOfRange(ApiError):
    status_code = 401
    code = "CAPTURE_TIMESTAMP_OUT_OF_RANGE"
    message = f"{TIMESTAMP_HEADER} must be Unix seconds within 5 minutes of the server's time."


def _media_type(request) -> str:
    return (request.META.get("CONTENT_TYPE") or "").split(";")[0].strip().lower()


def _delivery_id_header(request) -> str | None:
    value = request.headers.get(DELIVERY_HEADER)
    if value is None:
        return None
    if not value.strip() or len(value) > MAX_DELIVERY_ID or not value.isprintable():
        raise ValidationFailed.for_field(DELIVERY_HEADER, f"must be 1 to {MAX_DELIVERY_ID} printable characters")
    return value


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("number out of range")
    return value


def _json_object(raw: bytes) -> dict:
    # Strict JSON: NaN, Infinity and numbers beyond a double cannot be stored in jsonb, so they are the sender's
    # error (400) rather than an outage (503) the sender would resend into forever.
    try:
        body = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except (ValueError, UnicodeDecodeError):
        raise ValidationFailed.for_field("body", "is not valid JSON") from None
    except RecursionError:
        raise ValidationFailed.for_field("body", f"is nested deeper than {MAX_DEPTH} levels") from None
    if not isinstance(body, dict):
        raise ValidationFailed.for_field("body", "must be a JSON object")
    problem = _unstorable(body)
    if problem:
        raise ValidationFailed.for_field("body", problem)
    return body


def _event_id(body: dict) -> str | None:
    meta = body.get("_svc")
    if meta is None:
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("event_id", ""), str):
        raise ValidationFailed.for_field("_svc.event_id", "must be a string inside the _svc object")
    return meta.get("event_id")


def _unstorable(value: Any) -> str | None:
    """Why PostgreSQL could never store this value, or None. Text and jsonb cannot hold U+0000 or a lone surrogate,
    and nesting is capped: such a post is the sender's error (400), not an outage to resend into (503). Walked
    without recursion, so no depth reaches a RecursionError."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"is nested deeper than {MAX_DEPTH} levels"
        if isinstance(item, str):
            if "\x00" in item:
                return "text cannot contain NUL (U+0000) characters"
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "text cannot contain unpaired surrogate characters"
        elif isinstance(item, dict):
            stack.extend((part, depth + 1) for pair in item.items() for part in pair)
        elif isinstance(item, list):
            stack.extend((part, depth + 1) for part in item)
    return None


def _checked_fields(fields: dict[str, Any]) -> dict[str, Any]:
    if len(fields) > MAX_FIELDS:
        raise ValidationFailed.for_field("body", f"at most {MAX_FIELDS} fields")
    for name in fields:
        if not name or len(name) > MAX_FIELD_NAME:
            raise ValidationFailed.for_field("body", f"field names are 1 to {MAX_FIELD_NAME} characters")
    problem = _unstorable(fields)
    if problem:
        raise ValidationFailed.for_field("body", problem)
    return fields


def _digest(fields: dict, files=()) -> str:
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    digest = hashlib.sha256(canonical.encode())
    for name, upload in files:
        digest.update(name.encode())
        for chunk in upload.chunks():
            digest.update(chunk)
        upload.seek(0)
    return digest.hexdigest()


def read_signed(request, form) -> Incoming:
    """Signed mode: JSON only, no query string, the three headers, a v1 HMAC over "timestamp.deliveryId.rawBody"
    checked against the raw bytes (constant time) before the body is parsed."""
    if _media_type(request) != "application/json":
        raise UnsupportedMediaType("Signed captures must be application/json.")
    if request.META.get("QUERY_STRING"):
        raise ValidationFailed.for_field("query", "signed captures take no query parameters")
    delivery_id = _delivery_id_header(request)
    if delivery_id is None:
        raise ValidationFailed.for_field(DELIVERY_HEADER, "is required in signed mode")
    raw_timestamp = request.headers.get(TIMESTAMP_HEADER, "")
    if not re.fullmatch(r"[0-9]{1,12}", raw_timestamp):
        raise ValidationFailed.for_field(TIMESTAMP_HEADER, "must be Unix seconds")
    if abs(time.time() - int(raw_timestamp)) > TIMESTAMP_SKEW_SECONDS:
        raise TimestampOutOfRange()
    offered = [
        part.strip()[3:].lower()
        for part in request.headers.get(SIGNATURE_HEADER, "").split(",")
        if part.strip()[:3].lower() == "v1="
    ]
    if not offered:
        raise SignatureInvalid(f"{SIGNATURE_HEADER} must carry v1=<hex HMAC-SHA256>.")
    raw = request.body
    expected = [crypto.sign_v1(secret, raw_timestamp, delivery_id, raw)[3:] for secret in form_secrets(form)]
    if not any(crypto.constant_time_equals(want, got) for want in expected for got in offered):
        raise SignatureInvalid()
    body = _json_object(raw)
    event_id = _event_id(body)
    if event_id is not None and not crypto.constant_time_equals(event_id, delivery_id):
        raise ValidationFailed.for_field("_svc.event_id", f"must equal the {DELIVERY_HEADER} header")
    fields = _checked_fields({key: value for key, value in body.items() if key != "_svc"})
    return Incoming(fields=fields, delivery_id=delivery_id, content_digest=hashlib.sha256(raw).hexdigest())


def read_public(request) -> Incoming | None:
    """Public mode: a browser form (urlencoded or multipart) or JSON, no credentials. Marketing parameters on the
    query string count too (a form posting to a URL that kept the landing page's utm_* values). None for a post the
    honeypot caught."""
    media_type = _media_type(request)
    files: list = []
    if media_type == "application/json":
        body = _json_object(request.body)
        event_id = _event_id(body)
        fields = {key: value for key, value in body.items() if key != "_svc"}
    elif media_type in FORM_TYPES:
        django_request = request._request
        if media_type == "application/x-www-form-urlencoded":
            form_fields = strict_form_fields(request.body, field="body")
        else:
            form_fields = {key: django_request.POST.getlist(key) for key in django_request.POST}
            refuse_replacement_characters(form_fields, field="body")
        fields = {key: values[0] if len(values) == 1 else values for key, values in form_fields.items()}
        event_id = fields.pop("_svc_event_id", None) or fields.pop("_svc[event_id]", None)
        files = [(name, upload) for name in django_request.FILES for upload in django_request.FILES.getlist(name)]
        if len(files) > MAX_FILES:
            raise ValidationFailed.for_field("files", f"at most {MAX_FILES} files")
    else:
        raise UnsupportedMediaType("Send application/x-www-form-urlencoded, multipart/form-data or application/json.")
    if fields.pop(HONEYPOT, ""):
        return None
    fields = {key: value for key, value in fields.items() if not key.startswith("_svc")}
    for key, values in strict_form_fields(request.META.get("QUERY_STRING", ""), field="query").items():
        if key.lower() in ATTRIBUTION_FIELDS and key not in fields:
            fields[key] = values[-1]
    header_id = _delivery_id_header(request)
    if isinstance(event_id, list) or (event_id is not None and not isinstance(event_id, str)):
        raise ValidationFailed.for_field("_svc.event_id", "must be a string")
    if event_id is not None and (not event_id or len(event_id) > MAX_DELIVERY_ID):
        raise ValidationFailed.for_field("_svc.event_id", f"must be 1 to {MAX_DELIVERY_ID} characters")
    if header_id and event_id and header_id != event_id:
        raise ValidationFailed.for_field("_svc.event_id", f"must equal the {DELIVERY_HEADER} header")
    fields = _checked_fields(fields)
    return Incoming(
        fields=fields, delivery_id=header_id or event_id, content_digest=_digest(fields, files), files=files
    )
