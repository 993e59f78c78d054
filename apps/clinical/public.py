"""The clinical workspace's interface to other apps: import from here, never from its other modules or its api/.

- `register_record_section(name, build)`: a clinical app adds its part of GET /patient-record/{id} (call it in
  AppConfig.ready(); `build(organization, patient_id)` returns JSON-ready data).
- `practitioner_of_user(organization, user)`: the practitioner profile a member account is linked to
  (POST /settings/practitioners/{id}/user-link), or None: who the clinician is for notes and prescriptions.
"""

from apps.clinical.records import RecordSectionBuilder, record_sections, register_record_section
from apps.clinical.selectors import practitioner_of_user

__all__ = ["RecordSectionBuilder", "practitioner_of_user", "record_sections", "register_record_section"]
