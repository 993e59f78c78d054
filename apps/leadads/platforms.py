"""What each ad platform posts, read into normalized deliveries (one lead each), and the lead's answers read into the
capture's default field names (first_name, last_name, email, phone, postcode, …; apps.capture.fields). Pure
functions over the verified bytes; no database.

Bodies (research/providers.md; the short-video shape is ours to choose, documented in docs/lead-ads.md):

- social (Meta leadgen webhook): {"object": "page", "entry": [{"id": <page id>, "time": …, "changes": [{"field":
  "leadgen", "value": {"leadgen_id", "page_id", "form_id", "ad_id", "adgroup_id", "created_time"}}]}]}. The answers
  are not in the body: they are fetched from the Graph API (GET /{leadgen_id}, page token; apps.leadads.graph).
- search (Google Ads lead form webhook): {"lead_id", "form_id", "campaign_id", "adgroup_id", "creative_id",
  "gcl_id", "google_key", "is_test", "api_version", "user_column_data": [{"column_id": "FULL_NAME" | "EMAIL" |
  "PHONE_NUMBER" | …, "column_name", "string_value"}]}: one lead a body.
- short-video (TikTok lead generation, batched): {"leads": [{"lead_id", "advertiser_id", "campaign_id", "ad_id",
  "form_id", "create_time" (Unix seconds), "is_test", "ttclid", "fields": [{"name", "value"}], "consent"}]}.
"""

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from apps.core.fields import has_unstorable_text
from apps.leadads.models import Platform

MAX_DELIVERIES = 100
MAX_REF = 128
MAX_ID = 64
MAX_DEPTH = 32


class Malformed(ValueError):
    def __init__(self, field_name: str, problem: str):
        super().__init__(f"{field_name}: {problem}")
        self.field_name, self.problem = field_name, problem


class TooManyDeliveries(ValueError):
    def __init__(self, count: int):
        super().__init__(f"{count} deliveries")
        self.count = count


@dataclass(frozen=True)
class Delivery:
    lead_ref: str
    routing_key: str  # the page or advertiser the lead is for ("" for search ads: the routing token says)
    form_ref: str = ""
    campaign_ref: str = ""
    ad_ref: str = ""
    click_id_type: str = ""
    click_id: str = ""
    is_test: bool = False
    fields: dict[str, Any] | None = None  # default field names; None: fetched from the platform
    submitted_at: datetime | None = None


@dataclass
class Body:
    deliveries: list[Delivery] = field(default_factory=list)
    google_key: Any = None

    @property
    def routing_keys(self) -> list[str]:
        return sorted({d.routing_key for d in self.deliveries if d.routing_key})


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("number out of range")
    return value


def json_object(raw: bytes) -> dict:
    try:  # UTF-8 only (JSON's own encoding on the wire): the intake keeps the body as text
        data = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant, parse_float=_finite)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise Malformed("body", "is not valid JSON") from None
    if not isinstance(data, dict):
        raise Malformed("body", "must be a JSON object")
    if has_unstorable_text(data):
        raise Malformed("body", "text must not contain NUL or unpaired surrogate characters")
    return data


def _id(value, name: str, *, limit: int = MAX_ID, required: bool = True) -> str:
    if isinstance(value, bool) or value is None or value == "":
        if required:
            raise Malformed(name, "is required")
        return ""
    if isinstance(value, int):
        value = str(value)
    if not isinstance(value, str) or len(value) > limit or not value.isprintable() or not value.strip():
        raise Malformed(name, f"must be an id of at most {limit} printable characters")
    return value.strip()


def _list(value, name: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Malformed(name, "must be a list")
    return value


def _time(value) -> datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and 0 < value < 10_000_000_000:
        return datetime.fromtimestamp(value, tz=UTC)
    if isinstance(value, str):
        if value.isdigit():
            return _time(int(value))
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def _capped(deliveries: list) -> list:
    if len(deliveries) > MAX_DELIVERIES:
        raise TooManyDeliveries(len(deliveries))
    return deliveries


# --- the three bodies -----------------------------------------------------------------------------------------------


def parse_meta(raw: bytes) -> Body:
    data = json_object(raw)
    if data.get("object") != "page":
        raise Malformed("object", "must be page")
    changes = []
    for entry in _list(data.get("entry"), "entry"):
        if not isinstance(entry, dict):
            raise Malformed("entry", "must hold objects")
        for change in _list(entry.get("changes"), "entry.changes"):
            if isinstance(change, dict) and change.get("field") == "leadgen":
                changes.append((entry, change))
    _capped(changes)
    body = Body()
    for entry, change in changes:
        value = change.get("value")
        if not isinstance(value, dict):
            raise Malformed("entry.changes.value", "must be an object")
        page = _id(value.get("page_id") or entry.get("id"), "entry.changes.value.page_id")
        body.deliveries.append(
            Delivery(
                lead_ref=_id(value.get("leadgen_id"), "entry.changes.value.leadgen_id", limit=MAX_REF),
                routing_key=page,
                form_ref=_id(value.get("form_id"), "form_id", required=False),
                ad_ref=_id(value.get("ad_id"), "ad_id", required=False),
                submitted_at=_time(value.get("created_time")),
            )
        )
    return body


GOOGLE_COLUMNS = {
    "FULL_NAME": "full_name",
    "FIRST_NAME": "first_name",
    "LAST_NAME": "last_name",
    "EMAIL": "email",
    "WORK_EMAIL": "email",
    "PHONE_NUMBER": "phone",
    "WORK_PHONE": "telephone",
    "POSTAL_CODE": "postcode",
    "CITY": "city",
    "REGION": "county",
    "COUNTRY": "country",
    "STREET_ADDRESS": "address",
}


def parse_google(raw: bytes) -> Body:
    data = json_object(raw)
    answers: dict[str, Any] = {}
    for column in _list(data.get("user_column_data"), "user_column_data"):
        if not isinstance(column, dict):
            raise Malformed("user_column_data", "must hold objects")
        column_id = column.get("column_id") if isinstance(column.get("column_id"), str) else ""
        value = column.get("string_value")
        if not isinstance(value, str):
            continue
        name = GOOGLE_COLUMNS.get(column_id)
        if name is None:
            label = column.get("column_name") if isinstance(column.get("column_name"), str) else ""
            name = (label or column_id or "answer")[:200]
        answers[name] = value
    click = _id(data.get("gcl_id"), "gcl_id", limit=500, required=False)
    body = Body(google_key=data.get("google_key"))
    body.deliveries.append(
        Delivery(
            lead_ref=_id(data.get("lead_id"), "lead_id", limit=MAX_REF),
            routing_key="",
            form_ref=_id(data.get("form_id"), "form_id", required=False),
            campaign_ref=_id(data.get("campaign_id"), "campaign_id", required=False),
            ad_ref=_id(data.get("creative_id"), "creative_id", required=False),
            click_id_type="gclid" if click else "",
            click_id=click,
            is_test=data.get("is_test") is True,
            fields=answers_to_fields(answers),
        )
    )
    return body


def parse_short_video(raw: bytes) -> Body:
    data = json_object(raw)
    leads = _capped(_list(data.get("leads"), "leads"))
    body = Body()
    for lead in leads:
        if not isinstance(lead, dict):
            raise Malformed("leads", "must hold objects")
        answers: dict[str, Any] = {}
        for item in _list(lead.get("fields"), "leads.fields"):
            if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"]:
                answers[item["name"][:200]] = item.get("value")
        if lead.get("consent") is True:
            answers["marketing_consent"] = "true"
        click = _id(lead.get("ttclid"), "leads.ttclid", limit=500, required=False)
        body.deliveries.append(
            Delivery(
                lead_ref=_id(lead.get("lead_id"), "leads.lead_id", limit=MAX_REF),
                routing_key=_id(lead.get("advertiser_id"), "leads.advertiser_id"),
                form_ref=_id(lead.get("form_id"), "leads.form_id", required=False),
                campaign_ref=_id(lead.get("campaign_id"), "leads.campaign_id", required=False),
                ad_ref=_id(lead.get("ad_id"), "leads.ad_id", required=False),
                click_id_type="ttclid" if click else "",
                click_id=click,
                is_test=lead.get("is_test") is True,
                fields=answers_to_fields(answers),
                submitted_at=_time(lead.get("create_time")),
            )
        )
    return body


PARSERS = {
    Platform.META_PLATFORM: parse_meta,
    Platform.SEARCH_ADS: parse_google,
    Platform.SHORT_VIDEO: parse_short_video,
}


def parse(platform: str, raw: bytes) -> Body:
    return PARSERS[platform](raw)


# --- answers → the capture's default field names --------------------------------------------------------------------

# The platforms' standard questions (social and short-video name them alike), by the capture field they fill.
STANDARD = {
    "full_name": "full_name",
    "name": "full_name",
    "first_name": "first_name",
    "last_name": "last_name",
    "email": "email",
    "phone_number": "phone",
    "phone": "phone",
    "city": "city",
    "post_code": "postcode",
    "zip_code": "postcode",
    "postal_code": "postcode",
    "postcode": "postcode",
    "street_address": "address",
    "state": "county",
    "province": "county",
    "country": "country",
    "date_of_birth": "date_of_birth",
    "gender": "gender",
    "marketing_consent": "marketing_consent",
    "treatment": "treatment",
    "location": "location",
    "message": "message",
}


def _first(value) -> Any:
    if isinstance(value, list):
        return value[0] if value else ""
    return value


def answers_to_fields(answers: dict[str, Any]) -> dict[str, Any]:
    """The lead's answers under the capture's default names; other questions keep their own name (custom fields)."""
    fields: dict[str, Any] = {}
    for name, raw in answers.items():
        value = _first(raw)
        target = STANDARD.get(name.strip().lower())
        if target == "full_name":
            first, _, last = str(value or "").strip().partition(" ")
            if first:
                fields.setdefault("first_name", first)
            if last.strip():
                fields.setdefault("last_name", last.strip())
        elif target is not None:
            fields[target] = value
        else:
            fields[name] = value
    return fields


def meta_fields(lead: dict) -> dict[str, Any]:
    """A Graph lead's field_data ([{"name", "values": [...]}]) and consent checkboxes, as default field names."""
    answers: dict[str, Any] = {}
    for item in lead.get("field_data") or []:
        if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"]:
            answers[item["name"][:200]] = item.get("values")
    checked = [
        box for box in lead.get("custom_disclaimer_responses") or []
        if isinstance(box, dict) and str(box.get("is_checked", "")).lower() in ("1", "true")
    ]  # fmt: skip
    if checked:
        answers["marketing_consent"] = "true"
    return answers_to_fields(answers)
