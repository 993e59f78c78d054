"""Reads of the connected PMS for one practice."""

from apps.pms.models import PmsConnection, PmsImport, PmsPatientLink, PmsSyncReview


def connections_of(*, organization):
    return PmsConnection.objects.for_org(organization).order_by("-created_at", "-id")


def imports_of(*, organization, connection=None):
    rows = PmsImport.objects.for_org(organization)
    if connection is not None:
        rows = rows.filter(connection=connection)
    return rows.order_by("-created_at", "-id")


def reviews_of(*, organization, status=None, kind=None):
    rows = PmsSyncReview.objects.for_org(organization)
    if status:
        rows = rows.filter(status=status)
    if kind:
        rows = rows.filter(kind=kind)
    return rows.order_by("-created_at", "-id")


def patient_links(*, organization, patient_id):
    return (
        PmsPatientLink.objects.for_org(organization)
        .filter(patient_id=patient_id)
        .select_related("connection")
        .order_by("-linked_at", "-id")
    )
