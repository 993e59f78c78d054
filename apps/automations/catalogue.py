"""What a rule may be made of: triggers, condition fields and operators, action types and their parameters.

GET /automations/catalogue renders this module; apps.automations.validation checks rule bodies against it.

Condition fields of an event trigger: the event's actor type, `data.action` and `data.changedFields`, the data keys
its type carries (DATA_FIELDS), and the fields of the patient the event is about (its subject when that is a
patient, else data.patientId). A schedule trigger has no subject: its fields are the tick's weekday and day of month
(practice time).
"""

from dataclasses import dataclass, field

from apps.accounts.roles import ROLES
from apps.events.catalogue import EVENT_TYPES
from apps.patients.public import Status

MAX_CONDITIONS = 20
MAX_ACTIONS = 10
MAX_LIST_VALUES = 100
MAX_CHAIN_DEPTH = 5  # a run whose chain already holds this many rules is refused (refused_loop)
MAX_DUE_MINUTES = 60 * 24 * 365

# Field kinds → the operators they allow.
STRING, UUID, BOOL, NUMBER, LIST = "string", "uuid", "boolean", "number", "list"
OPERATORS: dict[str, tuple[str, ...]] = {
    STRING: ("eq", "neq", "in", "not_in", "exists"),
    UUID: ("eq", "neq", "in", "not_in", "exists"),
    BOOL: ("eq", "exists"),
    NUMBER: ("eq", "neq", "gt", "gte", "lt", "lte", "in", "not_in", "exists"),
    LIST: ("contains", "not_contains", "exists"),
}
OPERATOR_HELP = {
    "eq": "equals value",
    "neq": "differs from value (a missing field differs)",
    "in": "is one of value (a list of 1 to 100)",
    "not_in": "is none of value (a list of 1 to 100)",
    "gt": "greater than value",
    "gte": "greater than or equal to value",
    "lt": "less than value",
    "lte": "less than or equal to value",
    "contains": "the list holds value",
    "not_contains": "the list does not hold value",
    "exists": "value true: the field is set (not null, not empty); false: it is not",
}


@dataclass(frozen=True)
class Field:
    name: str
    kind: str
    description: str
    choices: tuple[str, ...] = ()
    ref: str | None = None  # a record of the practice the value must name (stage, tag, ...)


PATIENT_STATUSES = tuple(Status.values)
PATIENT_FIELDS = (
    Field("patient.status", STRING, "The patient's status now.", PATIENT_STATUSES),
    Field("patient.leadSourceId", UUID, "The patient's lead source.", ref="lead_source"),
    Field("patient.locationId", UUID, "The patient's location.", ref="location"),
    Field("patient.tagIds", LIST, "The patient's tags.", ref="tag"),
)
COMMON_FIELDS = (
    Field("actor.type", STRING, "Who made the change.", ("user", "system", "patient", "provider")),
    Field("data.action", STRING, "What the change was (updates: e.g. stage_changed, tags_changed)."),
    Field("data.changedFields", LIST, "The camelCase names of the fields an update changed."),
)
_JOURNEY = (
    Field("data.status", STRING, "The journey's status.", ("open", "won", "lost")),
    Field("data.stageId", UUID, "The journey's stage.", ref="stage"),
    Field("data.fromStageId", UUID, "The stage it left (stage changes).", ref="stage"),
    Field("data.pipelineId", UUID, "The journey's pipeline.", ref="pipeline"),
    Field("data.treatmentId", UUID, "The journey's treatment.", ref="treatment"),
)
_TASK = (
    Field("data.status", STRING, "The task's status.", ("open", "completed", "cancelled")),
    Field("data.priority", STRING, "The task's priority.", ("low", "normal", "high", "urgent")),
    Field("data.assigneeId", UUID, "The task's assignee (a member's user id).", ref="member"),
)
_APPOINTMENT = (
    Field("data.status", STRING, "The appointment's status."),
    Field("data.previousStatus", STRING, "Its status before (status changes)."),
    Field("data.practitionerId", UUID, "The appointment's practitioner.", ref="practitioner"),
    Field("data.locationId", UUID, "The appointment's location.", ref="location"),
    Field("data.treatmentId", UUID, "The appointment's treatment.", ref="treatment"),
)
_DEPOSIT = (
    Field("data.status", STRING, "The deposit request's status."),
    Field("data.amount", NUMBER, "The amount, in minor units."),
    Field("data.currency", STRING, "The currency (ISO 4217)."),
)
_LEAD_AD = (
    Field("data.status", STRING, "The submission's status."),
    Field("data.isTest", BOOL, "A test lead sent from the ad platform's tools."),
    Field("data.connectionId", UUID, "The lead-ad connection it came through."),
)
_CONVERSATION = (
    Field("data.channel", STRING, "The channel kind.", ("sms", "email", "messaging_app", "telephony_messaging")),
    Field("data.status", STRING, "The conversation's status."),
)
_MESSAGE = (
    Field("data.channel", STRING, "The channel kind.", ("sms", "email", "messaging_app", "telephony_messaging")),
)


def _for(prefix: str, fields: tuple[Field, ...]) -> dict[str, tuple[Field, ...]]:
    return {name: fields for name in EVENT_TYPES if name.startswith(prefix)}


DATA_FIELDS: dict[str, tuple[Field, ...]] = {
    "patient.created": (Field("data.status", STRING, "The status the patient was created with.", PATIENT_STATUSES),),
    **_for("journey.", _JOURNEY),
    **_for("task.", _TASK),
    **_for("appointment.", _APPOINTMENT),
    **_for("deposit_request.", _DEPOSIT),
    **_for("lead_ad_submission.", _LEAD_AD),
    **_for("conversation.", _CONVERSATION),
    "message.received": _MESSAGE,
    "message.sent": _MESSAGE,
}
SCHEDULE_FIELDS = (
    Field("tick.weekday", NUMBER, "The tick's weekday, practice time: 0 Monday to 6 Sunday."),
    Field("tick.day", NUMBER, "The tick's day of the month, practice time: 1 to 31."),
)


def event_fields(event_type: str) -> dict[str, Field]:
    return {f.name: f for f in (*COMMON_FIELDS, *DATA_FIELDS.get(event_type, ()), *PATIENT_FIELDS)}


def schedule_fields() -> dict[str, Field]:
    return {f.name: f for f in SCHEDULE_FIELDS}


# --- actions ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    name: str  # snake_case (camelCase on the wire)
    kind: str
    description: str
    required: bool = False
    choices: tuple[str, ...] = ()
    ref: str | None = None


@dataclass(frozen=True)
class ActionType:
    name: str
    description: str
    params: tuple[Param, ...] = field(default_factory=tuple)
    needs: str | None = None  # "patient" or "journey": what the trigger's subject must lead to


TASK_PRIORITIES = ("low", "normal", "high", "urgent")
SETTABLE_PATIENT_STATUSES = ("enquiry", "lead", "patient", "inactive")

ACTIONS: dict[str, ActionType] = {
    a.name: a
    for a in (
        ActionType(
            "create_task",
            "A task, about the event's patient and journey when it has them. assigneeId names a member; "
            "assigneeRole a role queue: the member of that role with the fewest open tasks takes it (unassigned when "
            "the practice has no member of that role). Due dueInMinutes after the run (no due time without it).",
            (
                Param("title", STRING, "1 to 200 characters.", required=True),
                Param("assignee_id", UUID, "A member's user id.", ref="member"),
                Param("assignee_role", STRING, "A role queue.", choices=ROLES),
                Param("due_in_minutes", NUMBER, f"0 to {MAX_DUE_MINUTES}."),
                Param("priority", STRING, "Default normal.", choices=TASK_PRIORITIES),
            ),
        ),
        ActionType(
            "send_template",
            "A message template to the event's patient on the practice's connection of the template's channel, "
            "through the sending pipeline: a marketing template needs the patient's consent on the channel and "
            "carries its opt-out link; blocks, opt-outs and quiet hours apply as to any message.",
            (Param("template_id", UUID, "A message template of the practice.", required=True, ref="template"),),
            needs="patient",
        ),
        ActionType(
            "move_stage",
            "Moves the journey to an open stage: the event's journey, or the patient's open journey in the stage's "
            "pipeline (the most recently updated one).",
            (Param("stage_id", UUID, "An open, unarchived stage.", required=True, ref="open_stage"),),
            needs="journey",
        ),
        ActionType(
            "add_tag",
            "Adds a tag to the event's patient.",
            (Param("tag_id", UUID, "A tag of the practice.", required=True, ref="tag"),),
            needs="patient",
        ),
        ActionType(
            "remove_tag",
            "Removes a tag from the event's patient.",
            (Param("tag_id", UUID, "A tag of the practice.", required=True, ref="tag"),),
            needs="patient",
        ),
        ActionType(
            "set_patient_status",
            "Sets the event's patient's status.",
            (Param("status", STRING, "The new status.", required=True, choices=SETTABLE_PATIENT_STATUSES),),
            needs="patient",
        ),
    )
}

SCHEDULE_FREQUENCIES = ("daily", "weekly")
