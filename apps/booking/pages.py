"""The hosted booking page a patient opens (GET /booking/{token}) and its two form posts (…/page/hold and
…/page/complete), and the booking's management page (GET /booking/manage/{uid} for a browser) with its actions:
the free times to move to (…/page/times), and the form posts …/page/reschedule and …/page/cancel. Plain
server-rendered HTML, no JavaScript, nothing loaded from elsewhere (apps.core.browser_pages people_page), never framed,
never cached. Times are shown in the practice's timezone."""

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


def _day_links(page, day: date, base: str, query: str) -> list[dict]:
    first_day, last_day = selectors.bookable_days(page)
    days = [first_day + timedelta(days=n) for n in range((last_day - first_day).days + 1)]
    return [{"href": f"{base}?date={d.isoformat()}{query}", "label": d, "current": d == day} for d in days]


def _slot_rows(page, slots, offer) -> list[dict]:
    practitioners, locations = _names(offer.practitioners), _names(offer.locations)
    return [
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


def day_page(
    request, *, page, token: str, day: date, slots, treatment_id=None, message: str = "", status: int = 200
) -> HttpResponse:
    """The bookable days as links, and `day`'s free slots, each a form posting to …/page/hold."""
    offer = selectors.page_offer(page)
    treatment_query = f"&treatment={treatment_id}" if treatment_id else ""
    context = {
        "practice_name": page.organization.name,
        "page_name": page.name,
        "day": day,
        "days": _day_links(page, day, f"/booking/{token}", treatment_query),
        "treatments": offer.treatments,
        "treatment_id": str(treatment_id or ""),
        "slots": _slot_rows(page, slots, offer),
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
        "consent_text": page.consent_text,
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


def _page_of(booking):
    page = booking.page
    page.organization = booking.organization
    return page


def _appointment_context(booking) -> dict:
    appointment = booking.appointment
    page = _page_of(booking)
    return {
        "practice_name": booking.organization.name,
        "when": _local(page, appointment.starts_at),
        "practitioner": appointment.practitioner.name,
        "location": appointment.location.name if appointment.location_id else "",
        "treatment": appointment.treatment.name if appointment.treatment_id else "",
        "cancelled": appointment.status == "cancelled",
        "status": appointment.get_status_display(),
        "change_until": _local(page, appointment.starts_at - timedelta(minutes=page.change_notice_minutes)),
        "manage_link": f"/booking/manage/{booking.uid}",
    }


def closed_message(booking) -> str:
    """Why the booking can no longer be changed online (the page's readable BOOKING_CHANGE_NOT_ALLOWED)."""
    if booking.appointment.status == "cancelled":
        return "This appointment has been cancelled, so it can no longer be changed online."
    return "This appointment can no longer be changed or cancelled online. Please contact the practice."


def moved_message(booking) -> str:
    when = _local(_page_of(booking), booking.appointment.starts_at)
    return f"Your appointment has been moved to {when:%A} {when.day} {when:%B %Y, %H:%M}."


def manage_page(
    request, *, booking, message: str = "", alert: str = "", errors=None, status: int = 200
) -> HttpResponse:
    """A browser's view of GET /booking/manage/{uid}: the booking, its status and until when it may be changed;
    while it may, a link to the free times to move to and the cancel form (with its confirm checkbox). `message`
    says what was just done, `alert` what was refused."""
    base = f"/booking/manage/{booking.uid}"
    context = _appointment_context(booking) | {
        "changeable": selectors.change_refusal(booking) is None,
        "message": message,
        "alert": alert,
        "errors": errors or {},
        "times_link": f"{base}/page/times",
        "cancel_action": f"{base}/page/cancel",
    }
    return people_page(request, "booking/manage.html", context, status=status)


def times_page(
    request, *, booking, day: date, slots, practitioner_id=None, message: str = "", status: int = 200
) -> HttpResponse:
    """The free times a booking may move to: the page's bookable days as links, `day`'s free slots (of one
    practitioner, or of every practitioner of the page when `practitioner_id` is None) each a form posting to
    …/page/reschedule."""
    page = _page_of(booking)
    offer = selectors.page_offer(page)
    base = f"/booking/manage/{booking.uid}"
    chosen = str(practitioner_id) if practitioner_id else "any"
    context = _appointment_context(booking) | {
        "day": day,
        "days": _day_links(page, day, f"{base}/page/times", f"&practitioner={chosen}"),
        "practitioners": offer.practitioners,
        "practitioner_choice": chosen,
        "slots": _slot_rows(page, slots, offer),
        "message": message,
        "self_action": f"{base}/page/times",
        "reschedule_action": f"{base}/page/reschedule",
    }
    return people_page(request, "booking/reschedule.html", context, status=status)


def _is_manage(request) -> bool:
    return request.path_info.startswith("/booking/manage/")


def not_found_page(request) -> HttpResponse:
    return people_page(request, "booking/not_found.html", {"manage": _is_manage(request)}, status=404)


def error_page(request, *, title: str, message: str, status: int) -> HttpResponse:
    if status == 404:
        return not_found_page(request)
    context = {"title": title, "message": message, "manage": _is_manage(request)}
    return people_page(request, "booking/error.html", context, status=status)
