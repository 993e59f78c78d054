"""Reads of data transfer, always within one practice."""

from apps.transfer.models import DataExport, ImportProblem, PatientImport, PracticeArchive


def imports_of(*, organization):
    return PatientImport.objects.for_org(organization)


def problems_of(*, organization, run: PatientImport):
    return ImportProblem.objects.for_org(organization).filter(patient_import=run).order_by("row", "id")


def exports_of(*, organization):
    return DataExport.objects.for_org(organization)


def archive_of(*, organization) -> PracticeArchive | None:
    """The practice's latest archive (scheduled, closing, cancelled or closed), or None."""
    return PracticeArchive.objects.for_org(organization).select_related("export").order_by("-created_at", "-id").first()
