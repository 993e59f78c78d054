"""Writes of the capture area, one module per concern: forms (and their tokens and secrets), receiving, processing
(leads and journeys from stored submissions), review. The patient erasure and merge hooks are in apps/capture/hooks.py.
Every name is re-exported here: `from apps.capture.services import X` keeps working. To replace a function in a test,
patch it in its module (services.processing.submission_process), where its callers look it up."""

from apps.capture.hooks import erase_captures_of_patients, repoint_captures_to_survivor
from apps.capture.services.forms import (
    SECRET_OVERLAP,
    SECRET_PREFIX,
    TOKEN_PREFIX,
    CreatedForm,
    form_create,
    form_regenerate_token,
    form_secrets,
    form_set_status,
    form_token,
    form_update,
    mapping_confirm,
    secret_revoke_previous,
    secret_rotate,
    signing_disable,
    signing_enable,
    token_digest,
)
from apps.capture.services.processing import (
    MAX_PROCESS_ATTEMPTS,
    drain_practice,
    patient_match,
    process_backlog,
    submission_process,
    unpark_confirmed,
)
from apps.capture.services.receiving import (
    AttachmentsNotStored,
    FormChanged,
    Incoming,
    Receipt,
    _drain_flag,
    _store,
    capture_receive,
)
from apps.capture.services.review import (
    review_close,
)

__all__ = [
    "MAX_PROCESS_ATTEMPTS",
    "SECRET_OVERLAP",
    "SECRET_PREFIX",
    "TOKEN_PREFIX",
    "AttachmentsNotStored",
    "CreatedForm",
    "FormChanged",
    "Incoming",
    "Receipt",
    "_drain_flag",
    "_store",
    "capture_receive",
    "drain_practice",
    "erase_captures_of_patients",
    "form_create",
    "form_regenerate_token",
    "form_secrets",
    "form_set_status",
    "form_token",
    "form_update",
    "mapping_confirm",
    "patient_match",
    "process_backlog",
    "repoint_captures_to_survivor",
    "review_close",
    "secret_revoke_previous",
    "secret_rotate",
    "signing_disable",
    "signing_enable",
    "submission_process",
    "token_digest",
    "unpark_confirmed",
]
