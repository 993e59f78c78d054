"""The page a patient opens from a form link (GET /patient-form/{token} in a browser) and its form post (POST
/patient-form/{token}/page). Plain server-rendered HTML, mobile-friendly, no JavaScript, nothing loaded from elsewhere
(apps.core.browser_pages people_page: CSP default-src 'none', never framed, never cached). What the patient got wrong
is shown on the form again (400); other failures are an error page (registered in RecordsConfig.ready())."""

from django.http import HttpResponse

from apps.core.browser_pages import people_page
from apps.core.errors import ValidationFailed
from apps.records import services
from apps.records.errors import FormNotFound
from apps.records.models import FormKind, PatientForm
from apps.records.selectors import decrypted

BROWSER_PAGES = ("/patient-form/",)  # where a browser's failure is a page (apps.core.browser_pages)
YES, NO = "yes", "no"


def _questions(form: PatientForm) -> list[dict]:
    return form.questionnaire_version.questions if form.questionnaire_version else []


def form_page(request, *, form: PatientForm, token: str, values=None, errors=None, status: int = 200) -> HttpResponse:
    values = values or {}
    rows = [
        question
        | {
            "value": values.get(question["key"]),
            "error": (errors or {}).get(question["key"], ""),
            "is_multi": question["type"] == "multi_choice",
        }
        for question in _questions(form)
    ]
    context = {
        "practice_name": form.organization.name,
        "title": form.title,
        "consent": form.kind == FormKind.CONSENT,
        "consent_text": decrypted(form.consent_text_encrypted),
        "questions": rows,
        "errors": errors or {},
        "values": values,
        "action": f"/patient-form/{token}/page",
        "expires_at": form.expires_at,
    }
    return people_page(request, "records/form.html", context, status=status)


def not_found_page(request) -> HttpResponse:
    return people_page(request, "records/not_found.html", {}, status=404)


def error_page(request, *, title: str, message: str, status: int) -> HttpResponse:
    if status == 404:
        return not_found_page(request)
    return people_page(request, "records/error.html", {"title": title, "message": message}, status=status)


def _posted_answers(form: PatientForm, data) -> tuple[dict, dict]:
    """(answers for the service, the raw values to show again) from the page's form post."""
    answers, values = {}, {}
    for question in _questions(form):
        key, kind = question["key"], question["type"]
        if kind == "multi_choice":
            chosen = [value for value in data.getlist(key) if isinstance(value, str)]
            values[key] = chosen
            if chosen:
                answers[key] = chosen
            continue
        raw = (data.get(key) or "").strip()
        values[key] = raw
        if not raw:
            continue
        if kind == "boolean":
            answers[key] = {YES: True, NO: False}.get(raw, raw)
        elif kind == "number":
            try:
                answers[key] = int(raw) if raw.lstrip("-").isdigit() else float(raw)
            except ValueError:
                answers[key] = raw
        else:
            answers[key] = raw
    return answers, values


def submit_page(request, *, form: PatientForm, token: str) -> HttpResponse:
    data = request.data
    answers, values = _posted_answers(form, data)
    agree = (data.get("agree") or "").strip().lower() in (YES, "on", "true", "1")
    signature_name = (data.get("signatureName") or "").strip()[:200]
    values |= {"agree": agree, "signatureName": signature_name}
    try:
        services.form_submit(form=form, answers=answers, agree=agree, signature_name=signature_name)
    except FormNotFound:
        return not_found_page(request)
    except ValidationFailed as exc:
        fields = exc.details.get("fields", {})
        errors = {name.removeprefix("answers."): problems[0] for name, problems in fields.items()}
        return form_page(request, form=form, token=token, values=values, errors=errors, status=400)
    context = {"practice_name": form.organization.name, "title": form.title}
    return people_page(request, "records/thanks.html", context)
