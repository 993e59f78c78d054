"""The referrals area's part in erasing and merging a patient (registered in ReferralsConfig.ready()). No events:
the catalogue has none for referrals."""

from apps.referrals.models import Advocate, Referral, Reward


def erase_referrals_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure: an erased advocate's enrolments go (with their tokens, the referrals made through them and
    their rewards; the friends stay patients of the practice), and an erased friend's referral goes (its initials
    are theirs)."""
    Referral.objects.for_org(organization).filter(referred_patient_id__in=patient_ids).delete()
    Advocate.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def repoint_referrals_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's enrolments become the survivor's; where the survivor already advocates the same
    programme, the duplicate's referrals and rewards join the survivor's enrolment (its tokens stay the ones in use)
    and the duplicate's tokens stop. Referrals that brought the duplicate now name the survivor."""
    advocates = Advocate.objects.for_org(organization)
    for advocate in advocates.filter(patient_id=duplicate.pk):
        kept = advocates.filter(patient_id=survivor.pk, programme_id=advocate.programme_id).first()
        if kept is None:
            advocate.patient_id = survivor.pk
            advocate.save(update_fields=["patient", "updated_at"])
            continue
        Referral.objects.for_org(organization).filter(advocate=advocate).update(advocate=kept)
        Reward.objects.for_org(organization).filter(advocate=advocate).update(advocate=kept)
        advocate.delete()
    Referral.objects.for_org(organization).filter(referred_patient_id=duplicate.pk).update(
        referred_patient_id=survivor.pk
    )
