"""The hosted booking page a patient opens (GET /booking/{token}) and its two form posts (…/page/hold and
…/page/complete). Plain server-rendered HTML, no JavaScript, nothing loaded from elsewhere (apps.core.browser_pages
people_page), never framed, never cached. Times are shown in the practice's timezone."""

from datetime import date, timedelta

from django.conf import settings
from django.http import HttpResponse

from apps.booking import selectors
from apps.core.browser_pages import people_page

BROWSER_PAGES = ("/booking/",)  # where a browser's failure is a page (apps.core.browser_pages)


def _local(page, instant):
    """The practice's wall-clock time (naive: templates would otherwise show an aware time in UTC)."""
    return instant.astimezone(selectors.practice_timezone(page.organization)).replace(tzinfo=None)


def _names(rows) -> dict:
    return {row.id: row.name for row in rows}


def day_page(
    request, *, page, token: str, day: date, slots, treatment_id=None, message: str = "", status: int = 200
) -> HttpResponse:
    """The bookable days as links, and `day`'s free slots, each a form posting to …/page/hold."""
    offer = selectors.page_offer(page)
    practitioners, locations = _names(offer.practitioners), _names(offer.locations)
    first_day, last_day = selectors.bookable_days(page)
    days = [first_day + timedelta(days=n) for n in range((last_day - first_day).days + 1)]
    treatment_query = f"&treatment={treatment_id}" if treatment_id else ""
    rows = [
        {
            "time": _local(page, slot.starts_at).strftime("%H:%M"),
            "starts_at": slot.starts_at.isoformat(),
            "practitioner_id": slot.practitioner_id,
            "practitioner": practitioners.get(slot.practitioner_id, ""),
            "location_id": slot.location_id or "",
            "location": locations.get(slot.location_id, ""),
        }
        for slot in slots
    ]
    context = {
        "practice_name": page.organization.name,
        "page_name": page.name,
        "day": day,
        "days": [{"value": d.isoformat(), "label": d, "current": d == day} for d in days],
        "treatment_query": treatment_query,
        "treatments": offer.treatments,
        "treatment_id": str(treatment_id or ""),
        "slots": rows,
        "message": message,
        "hold_action": f"/booking/{token}/page/hold",
        "self_action": f"/booking/{token}",
    }
    return people_page(request, "booking/day.html", context, status=status)


def details_page(request, *, page, token: str, hold, values=None, errors=None, status: int = 200) -> HttpResponse:
    """The held slot and the patient's details form, posting to …/page/complete."""
    offer = selectors.page_offer(page)
    context = {
        "practice_name": page.organization.name,
        "when": _local(page, hold.starts_at),
        "practitioner": _names(offer.practitioners).get(hold.practitioner_id, ""),
        "location": _names(offer.locations).get(hold.location_id, ""),
        "expires_at": _local(page, hold.expires_at),
        "hold_id": hold.key,
        "values": values or {},
        "errors": errors or {},
        "action": f"/booking/{token}/page/complete",
        "back": f"/booking/{token}?date={_local(page, hold.starts_at).date().isoformat()}",
    }
    return people_page(request, "booking/details.html", context, status=status)


def confirmed_page(request, *, page, booking, status: int = 200) -> HttpResponse:
    appointment = booking.appointment
    context = {
        "practice_name": page.organization.name,
        "when": _local(page, appointment.starts_at),
        "practitioner": appointment.practitioner.name,
        "location": appointment.location.name if appointment.location_id else "",
        "manage_link": f"{settings.SVC_BASE_URL}/booking/manage/{booking.uid}",
    }
    return people_page(request, "booking/confirmed.html", context, status=status)


def manage_page(request, *, booking) -> HttpResponse:
    """A browser's view of GET /booking/manage/{uid}: the booking, its status and until when it may be changed."""
    appointment = booking.appointment
    page = booking.page
    page.organization = booking.organization
    context = {
        "practice_name": booking.organization.name,
        "when": _local(page, appointment.starts_at),
        "practitioner": appointment.practitioner.name,
        "location": appointment.location.name if appointment.location_id else "",
        "treatment": appointment.treatment.name if appointment.treatment_id else "",
        "cancelled": appointment.status == "cancelled",
        "status": appointment.get_status_display(),
        "change_until": _local(page, appointment.starts_at - timedelta(minutes=page.change_notice_minutes)),
    }
    return people_page(request, "booking/manage.html", context)


def not_found_page(request) -> HttpResponse:
    return people_page(request, "booking/not_found.html", {}, status=404)


def error_page(request, *, title: str, message: str, status: int) -> HttpResponse:
    if status == 404:
        return not_found_page(request)
    return people_page(request, "booking/error.html", {"title": title, "message": message}, status=status)
