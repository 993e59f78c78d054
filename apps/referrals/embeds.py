"""GET /patients/{id}?embed=referral, answered by this area (apps.patients.embeds registry)."""

from apps.patients.public import PatientEmbed
from apps.referrals import selectors
from apps.referrals.renderers import PatientReferralSerializer


def render(*, organization, patient) -> dict:
    advocacies = selectors.patient_advocacies(organization=organization, patient_id=patient.id)
    data = {
        "advocacies": advocacies,
        "rewards": selectors.patient_rewards(organization=organization, advocate_ids=[a.id for a in advocacies]),
        "referred_by": selectors.referral_of_patient(organization=organization, patient_id=patient.id),
    }
    return PatientReferralSerializer(data).data


REFERRAL_EMBED = PatientEmbed(
    name="referral",
    field=lambda: PatientReferralSerializer(required=False, help_text="With embed=referral."),
    render=render,
)
