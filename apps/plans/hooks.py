"""Treatment plans' part in erasing and merging a patient (registered in PlansConfig.ready())."""

from apps.patients.public import repoint_rows_to_survivor
from apps.plans.models import TreatmentPlan
from apps.plans.services import SUBJECT


def erase_plans_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure, inside the erasure's transaction: the patients' plans go with their items (no event: the
    subject is gone, and patient.archived / the erasure itself say so)."""
    TreatmentPlan.objects.for_org(organization).filter(patient_id__in=list(patient_ids)).delete()


def repoint_plans_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's plans are the survivor's; each moved plan records one pms_treatment_plan.updated
    (action patient_merged)."""
    repoint_rows_to_survivor(
        organization=organization,
        model=TreatmentPlan,
        subject_type=SUBJECT,
        survivor=survivor,
        duplicate=duplicate,
    )
