"""The template language: text with variables written {{name}} (spaces inside the braces allowed), from a fixed set.

Checked when a template is saved: a variable outside the set, a variable only marketing messages have in a service
template, or braces that do not form a variable (an unclosed "{{", a stray "}}", "{{ }}", "{{Patient Name}}") are
refused with the field and the variable named. Rendered per recipient: values are inserted as they are in plain text
(SMS, message text, the e-mail's text part; line breaks in a subject become spaces) and HTML-escaped in the e-mail's
HTML part. A variable with no value for a patient (no upcoming appointment) is reported, not rendered empty.
"""

import re
from dataclasses import dataclass

from django.utils.html import escape

# name → what it is (documented in docs/campaigns.md and the templates routes' descriptions)
VARIABLES: dict[str, str] = {
    "patient.first_name": "the patient's first name",
    "patient.last_name": "the patient's last name (may be empty)",
    "patient.full_name": "first and last name",
    "patient.preferred_name": "the patient's preferred name, or the first name when there is none",
    "practice.name": "the practice's name",
    "appointment.date": "the date of the patient's next appointment (e.g. 14 May 2026), in the practice's time zone",
    "appointment.time": "its start time (24-hour, e.g. 09:30), in the practice's time zone",
    "appointment.practitioner": "the practitioner the next appointment is with",
    "appointment.location": "the location of the next appointment (may be empty)",
    "unsubscribe.link": "the patient's one-click opt-out link (marketing templates only)",
}
MARKETING_ONLY = frozenset({"unsubscribe.link"})
UNSUBSCRIBE = "unsubscribe.link"
APPOINTMENT_VARIABLES = frozenset(name for name in VARIABLES if name.startswith("appointment."))

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_NAME = re.compile(r"^[a-z]+\.[a-z_]+$")


class TemplateSyntaxProblem(ValueError):
    """What is wrong with a text, in words a person can act on; `variable` names the variable (or the fragment)."""

    def __init__(self, problem: str, variable: str):
        super().__init__(problem)
        self.problem, self.variable = problem, variable


@dataclass(frozen=True)
class Parsed:
    parts: tuple  # str (literal text) or Var
    names: tuple[str, ...]  # the variables in order of appearance (repeats included)


@dataclass(frozen=True)
class Var:
    name: str


def parse(text: str, *, marketing: bool = True) -> Parsed:
    """The text's literal parts and variables, or TemplateSyntaxProblem for the first thing wrong."""
    parts: list = []
    names: list[str] = []
    position = 0
    for match in _PLACEHOLDER.finditer(text):
        _literal(text[position : match.start()], parts)
        inner = match.group(1).strip()
        if not _NAME.match(inner):
            fragment = match.group(0)[:60]
            raise TemplateSyntaxProblem(
                f"{fragment!r} is not a variable: write {{{{name}}}} with a name from the list "
                f"({', '.join(VARIABLES)})",
                fragment,
            )
        if inner not in VARIABLES:
            raise TemplateSyntaxProblem(
                f"unknown variable {{{{{inner}}}}}; the variables are {', '.join(VARIABLES)}", inner
            )
        if inner in MARKETING_ONLY and not marketing:
            raise TemplateSyntaxProblem(f"{{{{{inner}}}}} is only for marketing templates", inner)
        parts.append(Var(inner))
        names.append(inner)
        position = match.end()
    _literal(text[position:], parts)
    return Parsed(tuple(parts), tuple(names))


def _literal(text: str, parts: list) -> None:
    for token in ("{{", "}}"):
        index = text.find(token)
        if index >= 0:
            fragment = text[max(0, index - 10) : index + 20]
            raise TemplateSyntaxProblem(
                f"{token!r} without its {'closing' if token == '{{' else 'opening'} braces near {fragment!r}", token
            )
    if text:
        parts.append(text)


def names_of(*texts: str, marketing: bool = True) -> list[str]:
    """The distinct variables of the texts, in order of first appearance."""
    found: dict[str, None] = {}
    for text in texts:
        for name in parse(text, marketing=marketing).names:
            found.setdefault(name, None)
    return list(found)


class MissingValue(LookupError):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def render(text: str, values: dict, *, html: bool = False, one_line: bool = False) -> str:
    """The text with each variable replaced by its value (HTML-escaped with `html`; line breaks turned to spaces with
    `one_line`, for a subject). A variable whose value is None raises MissingValue."""
    out = []
    for part in parse(text).parts:
        if isinstance(part, str):
            out.append(part)
            continue
        value = values.get(part.name)
        if value is None:
            raise MissingValue(part.name)
        value = str(value)
        if one_line:
            value = " ".join(value.split())
        out.append(escape(value) if html else value)
    return "".join(out)


def parameters(text: str, values: dict) -> list[str]:
    """A messaging-app template's parameters: the value of each variable in order of appearance ({{1}}, {{2}}, …
    of the provider's template)."""
    result = []
    for name in parse(text).names:
        value = values.get(name)
        if value is None:
            raise MissingValue(name)
        result.append(str(value))
    return result
