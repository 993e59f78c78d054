"""The connected PMS's interface to other apps: import from here, never from its other modules or its api/.

Offered: `PmsPatientLink` (which CRM patients are linked to a PMS patient, for areas that show or filter by it) and
`patient_links(*, organization, patient_id)` (a patient's links, newest first). Nothing else is meant for other
areas: the connection, imports, receipts and reviews are this app's own.
"""

from apps.pms.models import PmsPatientLink
from apps.pms.selectors import patient_links

__all__ = ["PmsPatientLink", "patient_links"]
