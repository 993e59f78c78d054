from apps.core.errors import ApiError


class AppointmentConflict(ApiError):
    status_code = 409
    code = "APPOINTMENT_CONFLICT"
    message = "The practitioner already has an appointment at that time."

    def __init__(self, conflicting_id):
        super().__init__(details={"conflictingAppointmentId": str(conflicting_id) if conflicting_id else None})


class AppointmentTransitionNotAllowed(ApiError):
    status_code = 409
    code = "APPOINTMENT_TRANSITION_NOT_ALLOWED"
    message = "The appointment's status does not allow this change."

    def __init__(self, *, status: str, target: str, allowed: list[str]):
        super().__init__(
            f"A {status} appointment cannot become {target}.",
            details={"status": status, "requested": target, "allowed": allowed},
        )


class AppointmentClosed(ApiError):
    status_code = 409
    code = "APPOINTMENT_CLOSED"
    message = "A completed, no-show or cancelled appointment cannot be changed or rescheduled."

    def __init__(self, status: str):
        super().__init__(details={"status": status})
