from apps.core.errors import ApiError


class TaskTransitionNotAllowed(ApiError):
    status_code = 409
    code = "TASK_TRANSITION_NOT_ALLOWED"
    message = "The task's status does not allow this action."

    def __init__(self, *, action: str, status: str, allowed_from: list[str]):
        super().__init__(
            f"A {status} task cannot be {action}; only a task that is {' or '.join(allowed_from)} can.",
            details={"action": action, "status": status, "allowedFrom": allowed_from},
        )
