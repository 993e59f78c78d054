"""The capture app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use (the hosted form pages in apps.sites): the capture form model, the form lookup and token, the
attribution field names and their reading, and the browser-answer registry (apps.capture.browser_answers) the
hosted form page fills in its AppConfig.ready(). Native lead ads and POST /leads (apps.leadads) make their leads
through `lead_record` (same matching, journey, touch and consent rules as a capture) after reading the fields with
`interpret` and checking `lead_problems()`.
"""

from apps.capture.browser_answers import register_browser_answers
from apps.capture.fields import ATTRIBUTION_FIELDS, CLICK_IDS, UTM_FIELDS, interpret
from apps.capture.models import CaptureForm
from apps.capture.selectors import form_for_token
from apps.capture.services import form_token
from apps.capture.services.leads import LeadRecorded, lead_record

__all__ = [
    "ATTRIBUTION_FIELDS",
    "CLICK_IDS",
    "UTM_FIELDS",
    "CaptureForm",
    "LeadRecorded",
    "form_for_token",
    "form_token",
    "interpret",
    "lead_record",
    "register_browser_answers",
]
