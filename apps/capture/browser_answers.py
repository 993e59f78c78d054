"""What a browser's post to a capture form gets instead of JSON: a registry the hosted form pages fill in.

The hosted form page (apps.sites) posts to capture's receiving route, and sites imports capture; so capture does not
import sites. SitesConfig.ready() registers its two answers here:

    refusal(request, form, fields) -> HttpResponse | None   the form again with its problems, before storing
    thanks(request, form) -> HttpResponse | None            the thank-you page after storing

Without a registration (or when an answer returns None) the route keeps its JSON answer.
"""

from collections.abc import Callable

from django.http import HttpResponse

BrowserAnswer = Callable[..., HttpResponse | None]

_answers: dict[str, BrowserAnswer] = {}


def register_browser_answers(*, refusal: BrowserAnswer, thanks: BrowserAnswer) -> None:
    _answers["refusal"] = refusal
    _answers["thanks"] = thanks


def browser_refusal(request, form, fields: dict | None) -> HttpResponse | None:
    refusal = _answers.get("refusal")
    return refusal(request, form, fields) if refusal is not None else None


def browser_thanks(request, form) -> HttpResponse | None:
    thanks = _answers.get("thanks")
    return thanks(request, form) if thanks is not None else None
