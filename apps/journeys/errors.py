from apps.core.errors import ApiError


class TreatmentNameTaken(ApiError):
    status_code = 409
    code = "TREATMENT_NAME_TAKEN"
    message = "A treatment with this name already exists in the practice."


class TreatmentBuiltin(ApiError):
    status_code = 409
    code = "TREATMENT_BUILTIN"
    message = "The built-in General enquiry treatment cannot be archived."


class PipelineNameTaken(ApiError):
    status_code = 409
    code = "PIPELINE_NAME_TAKEN"
    message = "A pipeline with this name already exists in the practice."


class StageNameTaken(ApiError):
    status_code = 409
    code = "STAGE_NAME_TAKEN"
    message = "This pipeline already has a stage with this name."


class PipelineStagesInvalid(ApiError):
    status_code = 409
    code = "PIPELINE_STAGES_INVALID"
    message = "A pipeline keeps exactly one won stage, one lost stage and at least one active open stage."


class DefaultPipelineRequired(ApiError):
    status_code = 409
    code = "DEFAULT_PIPELINE_REQUIRED"
    message = "The practice always has a default pipeline: make another one the default instead."


class JourneyAlreadyOpen(ApiError):
    status_code = 409
    code = "JOURNEY_ALREADY_OPEN"
    message = "This patient already has an open journey for this treatment."


class JourneyNotOpen(ApiError):
    status_code = 409
    code = "JOURNEY_NOT_OPEN"
    message = "This journey is won or lost; reopen it first."


class JourneyAlreadyOpenState(ApiError):
    status_code = 409
    code = "JOURNEY_NOT_CLOSED"
    message = "This journey is open; only won or lost journeys can be reopened."


class StageArchived(ApiError):
    status_code = 409
    code = "STAGE_ARCHIVED"
    message = "This stage is archived: journeys already on it stay, new ones cannot move in."


class TreatmentArchived(ApiError):
    status_code = 409
    code = "TREATMENT_ARCHIVED"
    message = "This treatment is archived; restore it or pick another."
