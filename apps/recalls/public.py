"""The recalls app's interface to other apps: import from here, never from its other modules or its api/.

Nothing is used by other apps yet. Recalls and the waitlist reach other areas through their public modules and
registries: apps.appointments (on_slot_freed, on_completed, appointment_create, appointment_cancel), apps.conversations
(queue_messages, purpose service), apps.patients (on_erase, on_merge) and apps.clinical (the patient record's
`recalls` and `waitlist` sections). For reading a patient's recalls, the models and their statuses are offered.
"""

from apps.recalls.models import Recall, RecallStatus, WaitlistEntry, WaitlistStatus

__all__ = ["Recall", "RecallStatus", "WaitlistEntry", "WaitlistStatus"]
