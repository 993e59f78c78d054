"""Clinical records' interface to other apps: import from here, never from its other modules or its api/.

Nothing is needed by other apps yet: the patient record (apps.clinical) receives this app's sections (notes,
medicalHistory, alerts) through `register_record_section`, and erasure and merge reach its rows through the patients
app's hooks, both registered in RecordsConfig.ready(). `active_alert_texts(organization, patient_id)` is offered
for a clinical view that must show a patient's active medical alerts (e.g. the day list): decrypted texts, newest
first — clinical content, never for the CRM's non-clinical views, events or logs.
"""

from apps.records.selectors import alerts_of, decrypted


def active_alert_texts(organization, patient_id) -> list[str]:
    return [decrypted(alert.text_encrypted) for alert in alerts_of(organization=organization, patient_id=patient_id)]


__all__ = ["active_alert_texts"]
