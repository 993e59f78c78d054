"""The shape of a questionnaire's questions, the default medical history questionnaire, checking answers against a
version's questions, and the alerts answers raise.

A question: {"key", "label", "type", "required", "choices", "alert", "alertWhen", "alertLabel", "help"}.
- type: boolean, text, choice (one of `choices`), multi_choice (a list of `choices`), date (YYYY-MM-DD), number.
- alert: whether an answer raises a medical alert: boolean questions when answered true; text questions when not
  blank (the alert reads "<alertLabel>: <answer>"); choice and multi_choice questions when a value is in `alertWhen`.
"""

import re
from datetime import date

KEY = re.compile(r"[a-z][a-zA-Z0-9]{0,63}")  # a camelCase wire name: it travels as a JSON key
QUESTION_TYPES = ("boolean", "text", "choice", "multi_choice", "date", "number")
MAX_QUESTIONS = 200
MAX_TEXT_ANSWER = 2000


def _q(key, label, type_="boolean", *, required=True, alert=False, alert_label="", choices=None, help_text=""):
    question = {
        "key": key,
        "label": label,
        "type": type_,
        "required": required,
        "choices": list(choices or []),
        "alert": alert,
        "alertWhen": [],
        "alertLabel": alert_label,
        "help": help_text,
    }
    return question


DEFAULT_NAME = "Medical history"
DEFAULT_QUESTIONS = [
    _q("medications", "Are you taking any medicines, tablets or inhalers?"),
    _q("medicationsList", "Which medicines (name and dose)?", "text", required=False),
    _q("allergies", "Allergies (medicines, latex, foods…)", "text", required=False, alert=True, alert_label="Allergy"),
    _q(
        "anticoagulants",
        "Do you take blood thinners (warfarin, apixaban, rivaroxaban, clopidogrel…)?",
        alert=True,
        alert_label="Anticoagulants",
    ),
    _q(
        "bisphosphonates",
        "Have you ever taken bisphosphonates or bone-density medicines (alendronate, denosumab…)?",
        alert=True,
        alert_label="Bisphosphonates",
    ),
    _q(
        "heartCondition",
        "Do you have a heart condition (angina, heart attack, valve problem, pacemaker)?",
        alert=True,
        alert_label="Heart condition",
    ),
    _q(
        "endocarditisRisk",
        "Have you been told you are at risk of infective endocarditis?",
        alert=True,
        alert_label="Endocarditis risk",
    ),
    _q("highBloodPressure", "Do you have high blood pressure?"),
    _q("diabetes", "Do you have diabetes?", alert=True, alert_label="Diabetes"),
    _q(
        "bleedingDisorder",
        "Do you have a bleeding disorder or bruise easily?",
        alert=True,
        alert_label="Bleeding disorder",
    ),
    _q("asthma", "Do you have asthma or another breathing condition?"),
    _q("epilepsy", "Do you have epilepsy?", alert=True, alert_label="Epilepsy"),
    _q("infectiousDisease", "Do you have hepatitis, HIV or another infectious condition?", required=False),
    _q("pregnant", "Are you pregnant or breastfeeding?", required=False, alert=True, alert_label="Pregnant"),
    _q("smoking", "Do you smoke or use tobacco?", "choice", choices=["never", "former", "current"]),
    _q("alcoholUnitsPerWeek", "Alcohol units per week", "number", required=False),
    _q("otherConditions", "Anything else we should know about your health?", "text", required=False),
]


def default_questions() -> list[dict]:
    return [dict(question, choices=list(question["choices"])) for question in DEFAULT_QUESTIONS]


def check_questions(questions) -> list[dict]:
    """Normalised questions, or ValueError naming the first problem (as 'questions[<i>].<field>: problem')."""
    if not isinstance(questions, list) or not questions:
        raise ValueError("questions: must be a non-empty list")
    if len(questions) > MAX_QUESTIONS:
        raise ValueError(f"questions: at most {MAX_QUESTIONS}")
    seen: set[str] = set()
    normalised = []
    for index, question in enumerate(questions):
        where = f"questions[{index}]"
        if not isinstance(question, dict):
            raise ValueError(f"{where}: must be an object")
        unknown = set(question) - {
            "key",
            "label",
            "type",
            "required",
            "choices",
            "alert",
            "alertWhen",
            "alertLabel",
            "help",
        }
        if unknown:
            raise ValueError(f"{where}: unknown fields {', '.join(sorted(unknown))}")
        key = question.get("key")
        if not isinstance(key, str) or not KEY.fullmatch(key):
            raise ValueError(
                f"{where}.key: must be camelCase letters and digits (a lower-case letter first), at most 64"
            )
        if key in seen:
            raise ValueError(f"{where}.key: {key} is used twice")
        seen.add(key)
        label = question.get("label")
        if not isinstance(label, str) or not label.strip() or len(label) > 500:
            raise ValueError(f"{where}.label: must be text of 1 to 500 characters")
        kind = question.get("type")
        if kind not in QUESTION_TYPES:
            raise ValueError(f"{where}.type: must be one of {', '.join(QUESTION_TYPES)}")
        choices = question.get("choices", [])
        if not isinstance(choices, list) or not all(isinstance(c, str) and 0 < len(c) <= 100 for c in choices):
            raise ValueError(f"{where}.choices: must be a list of texts of 1 to 100 characters")
        if kind in ("choice", "multi_choice") and (len(choices) < 2 or len(set(choices)) != len(choices)):
            raise ValueError(f"{where}.choices: needs at least two different choices")
        alert_when = question.get("alertWhen", [])
        if not isinstance(alert_when, list) or any(value not in choices for value in alert_when):
            raise ValueError(f"{where}.alertWhen: must list some of the question's choices")
        for flag in ("required", "alert"):
            if not isinstance(question.get(flag, False), bool):
                raise ValueError(f"{where}.{flag}: must be true or false")
        for text in ("alertLabel", "help"):
            value = question.get(text, "")
            if not isinstance(value, str) or len(value) > 500:
                raise ValueError(f"{where}.{text}: must be text of at most 500 characters")
        normalised.append(
            {
                "key": key,
                "label": label.strip(),
                "type": kind,
                "required": question.get("required", False),
                "choices": choices if kind in ("choice", "multi_choice") else [],
                "alert": question.get("alert", False),
                "alertWhen": alert_when if kind in ("choice", "multi_choice") else [],
                "alertLabel": question.get("alertLabel", "").strip(),
                "help": question.get("help", "").strip(),
            }
        )
    return normalised


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or value == []


def _answer(question: dict, value):
    """The stored form of one answer, or ValueError with the problem."""
    kind = question["type"]
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ValueError("must be true or false")
        return value
    if kind == "text":
        if not isinstance(value, str) or len(value) > MAX_TEXT_ANSWER or "\x00" in value:
            raise ValueError(f"must be text of at most {MAX_TEXT_ANSWER} characters")
        return value.strip()
    if kind == "choice":
        if value not in question["choices"]:
            raise ValueError(f"must be one of {', '.join(question['choices'])}")
        return value
    if kind == "multi_choice":
        if not isinstance(value, list) or any(item not in question["choices"] for item in value):
            raise ValueError(f"must be a list of {', '.join(question['choices'])}")
        return sorted(set(value), key=question["choices"].index)
    if kind == "date":
        try:
            if not isinstance(value, str) or len(value) != 10:
                raise ValueError
            return date.fromisoformat(value).isoformat()
        except ValueError:
            raise ValueError("must be a date (YYYY-MM-DD)") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or abs(value) > 1e9:
        raise ValueError("must be a number")
    return value


def check_answers(questions: list[dict], answers) -> tuple[dict, dict[str, list[str]]]:
    """(the answers to keep, problems by question key). Unknown keys are problems; blank optional answers drop."""
    if not isinstance(answers, dict):
        return {}, {"answers": ["must be an object of answers by question key"]}
    by_key = {question["key"]: question for question in questions}
    problems: dict[str, list[str]] = {
        key: ["is not a question of this questionnaire"] for key in answers if key not in by_key
    }
    kept = {}
    for key, question in by_key.items():
        value = answers.get(key)
        if _blank(value):
            if question["required"]:
                problems[key] = ["is required"]
            continue
        try:
            kept[key] = _answer(question, value)
        except ValueError as exc:
            problems[key] = [str(exc)]
    return kept, problems


def alerts_of(questions: list[dict], answers: dict) -> list[tuple[str, str]]:
    """(question key, alert text) for each answer that raises an alert."""
    raised = []
    for question in questions:
        if not question.get("alert") or question["key"] not in answers:
            continue
        value = answers[question["key"]]
        label = question.get("alertLabel") or question["label"]
        kind = question["type"]
        if kind == "boolean" and value is True:
            raised.append((question["key"], label))
        elif (kind == "text" and value) or (kind == "choice" and value in question["alertWhen"]):
            raised.append((question["key"], f"{label}: {value}"))
        elif kind == "multi_choice" and set(value) & set(question["alertWhen"]):
            raised.append((question["key"], f"{label}: {', '.join(v for v in value if v in question['alertWhen'])}"))
        elif kind in ("date", "number"):
            raised.append((question["key"], f"{label}: {value}"))
    return raised
