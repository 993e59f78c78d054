"""The e-mail of a subscribed report: a text part, an HTML summary, and the report's CSV attached."""

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.utils.html import format_html, format_html_join

from apps.core.naming import to_camel
from apps.reports.selectors import csv_filename, report_csv


def _figures(answer: dict) -> list[tuple[str, str]]:
    return [(to_camel(name), "" if value is None else str(value)) for name, value in answer["figures"].items()]


def send_report(*, to: str, practice: str, answer: dict) -> None:
    period = f"{answer['from']} to {answer['to']}"
    subject = f"{answer['title']}, {period} ({practice})"
    figures = _figures(answer)
    text = "\n".join(
        [f"{answer['title']} for {practice}, {period} ({answer['timezone']}).", ""]
        + [f"{name}: {value}" for name, value in figures]
        + ["", f"{len(answer['rows'])} rows in the attached CSV."]
    )
    html = format_html(
        "<h1>{}</h1><p>{}, {} ({})</p><table>{}</table><p>{} rows in the attached CSV.</p>",
        answer["title"],
        practice,
        period,
        answer["timezone"],
        format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", figures),
        len(answer["rows"]),
    )
    message = EmailMultiAlternatives(subject, text, settings.DEFAULT_FROM_EMAIL, [to])
    message.attach_alternative(html, "text/html")
    message.attach(csv_filename(answer), report_csv(answer), "text/csv")
    message.send()
