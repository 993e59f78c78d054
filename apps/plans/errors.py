"""The treatment plans app's error codes."""

from apps.core.errors import ApiError


class PlanTransitionNotAllowed(ApiError):
    status_code = 409
    code = "TREATMENT_PLAN_TRANSITION_NOT_ALLOWED"
    message = "The treatment plan's status does not allow this change."

    def __init__(self, *, status: str, target: str, allowed):
        super().__init__(
            f"A {status} treatment plan cannot become {target}.",
            details={"status": status, "requested": target, "allowed": list(allowed)},
        )


class ItemTransitionNotAllowed(ApiError):
    status_code = 409
    code = "TREATMENT_PLAN_ITEM_TRANSITION_NOT_ALLOWED"
    message = "The item's status does not allow this change."

    def __init__(self, *, status: str, target: str, allowed, plan_status: str | None = None):
        details = {"status": status, "requested": target, "allowed": list(allowed)}
        message = f"A {status} item cannot become {target}."
        if plan_status is not None:
            details["planStatus"] = plan_status
            message = f"An item of a {plan_status} treatment plan cannot become {target}: accept the plan first."
        super().__init__(message, details=details)


class PlanClosed(ApiError):
    status_code = 409
    code = "TREATMENT_PLAN_CLOSED"
    message = "A completed, declined or cancelled treatment plan's items cannot be changed."

    def __init__(self, *, status: str):
        super().__init__(details={"status": status})


class ItemNotPlanned(ApiError):
    status_code = 409
    code = "TREATMENT_PLAN_ITEM_CLOSED"
    message = "A completed or cancelled item cannot be changed or removed."

    def __init__(self, *, status: str):
        super().__init__(details={"status": status})


class PlanTooLarge(ApiError):
    status_code = 409
    code = "TREATMENT_PLAN_TOO_LARGE"
    message = "A treatment plan holds at most 200 items."

    def __init__(self, *, limit: int):
        super().__init__(details={"limit": limit})


class CurrencyMismatch(ApiError):
    status_code = 409
    code = "TREATMENT_PLAN_CURRENCY_MISMATCH"
    message = "The procedure's fee is in another currency than the plan's."

    def __init__(self, *, plan_currency: str, fee_currency: str):
        super().__init__(details={"planCurrency": plan_currency, "feeCurrency": fee_currency})


class DuplicateName(ApiError):
    status_code = 409
    code = "TREATMENT_TEMPLATE_NAME_TAKEN"
    message = "The practice already has a treatment template with this name."


class DuplicateCode(ApiError):
    status_code = 409
    code = "PROCEDURE_CODE_TAKEN"
    message = "The practice already has a procedure with this code."
