"""The 40 event names of the spec's catalogue. Nothing else may be emitted."""

CATALOGUE: dict[str, tuple[str, ...]] = {
    "Patients": ("patient.created", "patient.updated", "patient.archived"),
    "Journeys": (
        "journey.created",
        "journey.updated",
        "journey.stage_changed",
        "journey.won",
        "journey.lost",
        "journey.reopened",
    ),
    "Tasks": ("task.created", "task.updated", "task.completed", "task.reopened", "task.cancelled"),
    "Appointments": (
        "appointment.created",
        "appointment.updated",
        "appointment.status_changed",
        "appointment.rescheduled",
    ),
    "Conversations": ("conversation.created", "conversation.updated"),
    "Messages": ("message.received", "message.sent", "message.status_changed"),
    "Deposits": ("deposit_request.created", "deposit_request.status_changed"),
    "Reputation": (
        "reputation_request.status_changed",
        "reputation_feedback.received",
        "reputation_review.received",
        "reputation_review.updated",
        "reputation_reply.status_changed",
    ),
    "Native lead ads": (
        "lead_ad_submission.received",
        "lead_ad_submission.status_changed",
        "lead_ad_connection.health_changed",
    ),
    "PMS": (
        "pms_connection.health_changed",
        "pms_patient.link_changed",
        "pms_sync.review_required",
        "pms_treatment_plan.updated",
        "pms_invoice.updated",
        "pms_payment.updated",
    ),
    "Messaging connections": ("channel_connection.health_changed",),
}

EVENT_TYPES: tuple[str, ...] = tuple(name for names in CATALOGUE.values() for name in names)
EVENT_TYPE_SET = frozenset(EVENT_TYPES)
EVENT_TYPE_CHOICES = [(name, name) for name in EVENT_TYPES]

assert len(EVENT_TYPE_SET) == 40, "the spec's catalogue has exactly 40 names"
