"""What a submission's fields mean: the spec's default field names, the form's field mapping, and the marketing
parameters read automatically. Pure functions over plain dicts; no database."""

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

# The spec's default field names, each with the patient attribute it fills (None: used for routing or the timeline).
DEFAULT_FIELDS: dict[str, str | None] = {
    "first_name": "first_name",
    "last_name": "last_name",
    "email": "email",
    "phone": "phone_mobile",
    "telephone": "phone_other",
    "date_of_birth": "date_of_birth",
    "gender": "gender",
    "address": "address_line1",
    "address_line_2": "address_line2",
    "city": "city",
    "county": "province",
    "postcode": "postal_code",
    "country": "country",
    "preferred_contact_method": "preferred_contact_method",
    "preferred_contact_time": "preferred_contact_time",
    "treatment": None,
    "location": None,
    "message": None,
    "additional_information": None,
    "marketing_consent": None,
}
# Lengths of the patient columns the defaults fill (longer values are kept whole in customFields instead).
MAX_LENGTHS = {
    "first_name": 200,
    "last_name": 200,
    "email": 254,
    "phone_mobile": 40,
    "phone_other": 40,
    "address_line1": 200,
    "address_line2": 200,
    "city": 120,
    "province": 120,
    "postal_code": 20,
    "country": 64,
    "preferred_contact_time": 100,
}
UTM_FIELDS = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_id")
# Advertising click ids, by the platform that adds them to landing-page URLs.
CLICK_IDS = ("gclid", "gbraid", "wbraid", "dclid", "fbclid", "msclkid", "ttclid", "li_fat_id", "twclid", "yclid")
PAGE_FIELDS = ("landing_url", "referrer")
ATTRIBUTION_FIELDS = frozenset(UTM_FIELDS + CLICK_IDS + PAGE_FIELDS)

EMAIL_PROBLEM = "Enter a complete e-mail address, like jane@example.com."
EMAIL_TOO_LONG = f"An e-mail address can have at most {MAX_LENGTHS['email']} characters."
PHONE_PROBLEM = "Enter a phone number with at least 5 digits."
CONTACT_MISSING = "Enter an e-mail address or a phone number, so the practice can reply."
PHONE_MISSING = "Enter a phone number."

IGNORE = "ignore"
CUSTOM_PREFIX = "custom:"
MAX_FIELD_NAME = 200

_TRUE = {"1", "true", "yes", "y", "on", "checked", "accepted", "agree", "agreed", "granted", "si", "sì"}
_GENDERS = {"m": "male", "male": "male", "f": "female", "female": "female", "other": "other", "x": "other"}
_CONTACT_METHODS = {"phone": "phone", "call": "phone", "sms": "sms", "text": "sms", "email": "email", "e-mail": "email"}
_CONTACT_METHODS |= {"whatsapp": "whatsapp"}


def valid_target(target: str) -> bool:
    """A mapping target: a default field name, an attribution parameter, "custom:<key>" or "ignore"."""
    if target in DEFAULT_FIELDS or target in ATTRIBUTION_FIELDS or target == IGNORE:
        return True
    return target.startswith(CUSTOM_PREFIX) and 0 < len(target) - len(CUSTOM_PREFIX) <= MAX_FIELD_NAME


def phone_digits(value: str) -> str:
    """A phone number reduced to its digits; an international "00" prefix is the same as "+"."""
    digits = re.sub(r"\D", "", value or "")
    return digits[2:] if digits.startswith("00") else digits


def _text(value: Any) -> str:
    if isinstance(value, list):
        value = value[0] if value else ""
    if value is None or isinstance(value, (dict, list)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


@dataclass
class Interpreted:
    patient: dict[str, Any] = field(default_factory=dict)
    custom: dict[str, Any] = field(default_factory=dict)
    attribution: dict[str, str] = field(default_factory=dict)
    treatment: str = ""
    location: str = ""
    message: str = ""
    marketing_consent: bool = False
    # Contact values given but unusable, by the submission's own field name: what is wrong with each.
    contact_problems: dict[str, str] = field(default_factory=dict)

    def lead_problems(self, *, phone_required: bool = False) -> dict[str, str]:
        """Why this submission cannot become a lead, by field name; empty when it can. The one rule for both the
        processor (which then opens an intake-review item instead of a lead) and the hosted form page (which shows
        each problem next to its field): a lead needs a usable e-mail or phone — a phone for an incoming call."""
        if self.patient.get("phone_mobile") or (self.patient.get("email") and not phone_required):
            return {}
        given = {
            name: problem
            for name, problem in self.contact_problems.items()
            if not phone_required or problem == PHONE_PROBLEM
        }
        if given:
            return given
        if phone_required:
            return {"phone": PHONE_MISSING}
        return {"email": CONTACT_MISSING, "phone": CONTACT_MISSING}


def _set_default(result: Interpreted, name: str, raw: Any, original: str) -> None:
    value = _text(raw)
    if not value:
        if isinstance(raw, dict) and raw:
            result.custom[original] = raw  # structured data a default field cannot hold: kept, not lost
        return
    attribute = DEFAULT_FIELDS[name]
    if name == "marketing_consent":
        result.marketing_consent = value.lower() in _TRUE
    elif name in ("message", "additional_information"):
        result.message = f"{result.message}\n\n{value}".strip() if result.message else value
    elif name in ("treatment", "location"):
        setattr(result, name, value[:200])
    elif attribute == "email":
        try:
            validate_email(value)
        except ValidationError:
            result.custom[original] = raw
            result.contact_problems[original] = EMAIL_PROBLEM
            return
        if len(value) > MAX_LENGTHS["email"]:  # valid, but longer than the patient's column
            result.custom[original] = raw
            result.contact_problems[original] = EMAIL_TOO_LONG
            return
        result.patient["email"] = value.lower()
    elif attribute == "date_of_birth":
        try:
            born = dt.date.fromisoformat(value)
        except ValueError:
            born = None
        if born is None or born > dt.date.today():
            result.custom[original] = raw
            return
        result.patient["date_of_birth"] = born
    elif attribute == "gender":
        gender = _GENDERS.get(value.lower())
        if gender is None:
            result.custom[original] = raw
            return
        result.patient["gender"] = gender
    elif attribute == "preferred_contact_method":
        method = _CONTACT_METHODS.get(value.lower())
        if method is None:
            result.custom[original] = raw
            return
        result.patient["preferred_contact_method"] = method
    elif attribute in ("phone_mobile", "phone_other"):
        if len(value) > MAX_LENGTHS[attribute] or len(phone_digits(value)) < 5:
            result.custom[original] = raw
            result.contact_problems[original] = PHONE_PROBLEM
            return
        result.patient[attribute] = value
    elif len(value) > MAX_LENGTHS[attribute]:
        result.custom[original] = raw
    else:
        result.patient[attribute] = value


def interpret(fields: dict[str, Any], mapping: dict[str, str]) -> Interpreted:
    """Read a submission through the form's mapping. Unknown fields are kept as custom fields; values a default
    field cannot hold (a malformed e-mail, an impossible date) are kept under their own name rather than lost."""
    result = Interpreted()
    for original, raw in fields.items():
        target = mapping.get(original, original)
        if target == IGNORE:
            continue
        name = target.lower()
        if name in DEFAULT_FIELDS:
            _set_default(result, name, raw, original)
        elif name in ATTRIBUTION_FIELDS:
            value = _text(raw)
            if value:
                result.attribution[name] = value[:2048]
        elif target.startswith(CUSTOM_PREFIX):
            result.custom[target[len(CUSTOM_PREFIX) :]] = raw
        else:
            result.custom[original] = raw
    # A phone given only as "telephone" is still the number to reach the lead on.
    if "phone_mobile" not in result.patient and "phone_other" in result.patient:
        result.patient["phone_mobile"] = result.patient.pop("phone_other")
    return result


def unmapped_names(fields: dict[str, Any], mapping: dict[str, str]) -> list[str]:
    """The field names a person still has to decide about: not default, not attribution, not in the mapping."""
    return sorted(
        name
        for name in fields
        if name not in mapping and name.lower() not in DEFAULT_FIELDS and name.lower() not in ATTRIBUTION_FIELDS
    )
