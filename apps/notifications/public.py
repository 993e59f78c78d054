"""The notifications app's interface to other apps: import from here, never from its other modules or its api/.

notify(*, organization, user_ids, kind, title, subject_type, subject_id, data=None, patient_id=None,
dedupe_key=None) stores one notification per member named, inside the caller's transaction: only members of the
practice, and nobody who switched that kind off; then pushes notification.created to each after the commit. Titles
are cut to 120 characters on one line: put no patient free text in them beyond what the member may see anyway.
`Kind` names the kinds (assigned_conversation, mention, task_due, new_lead).
"""

from apps.notifications.models import Kind
from apps.notifications.services import notify

__all__ = ["Kind", "notify"]
