"""A template rendered for patients: their variable values (read in bulk: one query for the patients, one for their
next appointments) and the message the conversations pipeline sends.

Marketing messages always carry the patient's opt-out link: where the template places {{unsubscribe.link}}, there;
otherwise it is added at the end of an SMS or texting message ("Opt out: <link>"), of the e-mail's text part and of its
HTML part (a small "Unsubscribe" link before </body>), and the e-mail also gets it as its List-Unsubscribe URL
(RFC 8058 one-click). Messaging-app marketing templates must place it themselves (the provider's approved text cannot
be added to), which saving checks."""

import re
import zoneinfo
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.html import escape

from apps.appointments.public import ACTIVE_STATUSES, Appointment
from apps.campaigns import tokens, variables
from apps.campaigns.models import Category, Channel
from apps.patients.public import Patient

OPT_OUT_TEXT = "Opt out: {link}"
OPT_OUT_HTML = '<p style="font-size:12px;color:#666666"><a href="{link}">Unsubscribe</a></p>'
_BODY_END = re.compile(r"</body\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class Rendered:
    body: str
    subject: str = ""
    html: str = ""
    unsubscribe_url: str = ""
    template: dict | None = None  # messaging app: {"name", "language", "parameters"}


def content_of(template) -> dict:
    """What a campaign copies from its template at launch (and what single sends render from)."""
    return {
        "channel": template.channel,
        "category": template.category,
        "subject": template.subject,
        "body": template.body,
        "html": template.html,
        "variables": list(template.variables),
        "provider_template_name": template.provider_template_name,
        "language": template.language,
    }


def campaign_content(content: dict) -> dict:
    """A campaign's content as it is rendered: always marketing, so every message carries the opt-out link, whatever
    category the template had (launch refuses a service template; a campaign launched with one before that check
    still sends marketing messages, which the release queues as marketing)."""
    return {**content, "category": Category.MARKETING}


def _zone(organization) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(organization.timezone or "UTC")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


def _appointment_values(starts_at: datetime | None, practitioner, location, zone) -> dict:
    if starts_at is None:
        return dict.fromkeys(variables.APPOINTMENT_VARIABLES)
    local = starts_at.astimezone(zone)
    return {
        "appointment.date": f"{local.day} {local:%B %Y}",
        "appointment.time": f"{local:%H:%M}",
        "appointment.practitioner": practitioner or "",
        "appointment.location": location or "",
    }


def _patient_values(row: dict, organization) -> dict:
    first, last = row["first_name"], row["last_name"] or ""
    return {
        "patient.first_name": first,
        "patient.last_name": last,
        "patient.full_name": f"{first} {last}".strip(),
        "patient.preferred_name": row["preferred_name"] or first,
        "practice.name": organization.name,
    }


def values_for(organization, patient_ids: list, *, names) -> dict:
    """{patient id: {variable: value or None}} for the patients that exist (unsubscribe.link is added per message).
    The next appointment (active, starting from now) is read only when the template uses one of its variables."""
    rows = (
        Patient.objects.for_org(organization)
        .filter(id__in=patient_ids)
        .values("id", "first_name", "last_name", "preferred_name")
    )
    found = {row["id"]: _patient_values(row, organization) for row in rows}
    if found and variables.APPOINTMENT_VARIABLES & set(names):
        zone = _zone(organization)
        upcoming = {
            row["patient_id"]: row
            for row in Appointment.objects.for_org(organization)
            .filter(patient_id__in=list(found), starts_at__gte=timezone.now(), status__in=list(ACTIVE_STATUSES))
            .order_by("patient_id", "starts_at", "id")
            .distinct("patient_id")
            .values("patient_id", "starts_at", "practitioner__name", "location__name")
        }
        for patient_id, values in found.items():
            row = upcoming.get(patient_id) or {}
            values.update(
                _appointment_values(
                    row.get("starts_at"), row.get("practitioner__name"), row.get("location__name"), zone
                )
            )
    return found


def sample_values(organization, *, user_name: str = "") -> dict:
    """Values for a test send without a chosen patient: the sender's own name and an appointment tomorrow at 09:30."""
    first, _, last = (user_name or "Alex Sample").partition(" ")
    tomorrow = (timezone.now().astimezone(_zone(organization)) + timedelta(days=1)).replace(
        hour=9, minute=30, second=0, microsecond=0
    )
    return {
        "patient.first_name": first,
        "patient.last_name": last,
        "patient.full_name": f"{first} {last}".strip(),
        "patient.preferred_name": first,
        "practice.name": organization.name,
        **_appointment_values(tomorrow, "Dr Sample", "Main practice", _zone(organization)),
    }


def render(content: dict, values: dict, *, unsubscribe_url: str = "") -> Rendered:
    """The message for one recipient. Marketing content needs `unsubscribe_url`. Raises variables.MissingValue."""
    marketing = content["category"] == Category.MARKETING
    values = dict(values)
    if marketing:
        values[variables.UNSUBSCRIBE] = unsubscribe_url
    placed = variables.UNSUBSCRIBE in content.get("variables", ())
    body = variables.render(content["body"], values)
    channel = content["channel"]
    if channel == Channel.EMAIL:
        subject = variables.render(content["subject"], values, one_line=True)
        html = variables.render(content["html"], values, html=True) if content["html"] else ""
        if marketing and variables.UNSUBSCRIBE not in variables.names_of(content["body"]):
            body = f"{body}\n\n--\nUnsubscribe: {unsubscribe_url}"
        if marketing and html and variables.UNSUBSCRIBE not in variables.names_of(content["html"]):
            html = _with_html_opt_out(html, unsubscribe_url)
        return Rendered(body=body, subject=subject, html=html, unsubscribe_url=unsubscribe_url if marketing else "")
    if channel == Channel.MESSAGING_APP:
        template = {
            "name": content["provider_template_name"],
            "language": content["language"],
            "parameters": variables.parameters(content["body"], values),
        }
        return Rendered(body=body, template=template)
    if marketing and not placed:
        body = f"{body}\n\n{OPT_OUT_TEXT.format(link=unsubscribe_url)}"
    return Rendered(body=body)


def _with_html_opt_out(html: str, link: str) -> str:
    footer = OPT_OUT_HTML.format(link=escape(link))
    ends = list(_BODY_END.finditer(html))
    if ends:
        end = ends[-1].start()
        return html[:end] + footer + html[end:]
    return html + footer


def opt_out_url(*, organization_id, patient_id, channel: str, campaign_id=None) -> str:
    return tokens.url(
        tokens.make(organization_id=organization_id, patient_id=patient_id, channel=channel, campaign_id=campaign_id)
    )
