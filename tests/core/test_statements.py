"""apps.core.statements.CompiledRead: the remembered statement returns what the queryset returns (converters
included), per practice, and a placeholder that does not reach the statement exactly once is refused."""

import datetime

import pytest

from apps.core.statements import CompiledRead
from apps.patients.models import Patient
from tests.factories import OrganizationFactory, PatientFactory

COLUMNS = ("id", "first_name", "custom_fields", "date_of_birth", "created_at")


def _page(organization_id, offset, limit):
    return (
        Patient.objects.for_org(organization_id)
        .order_by("-created_at", "-id")
        .values(*COLUMNS)[offset : offset + limit]
    )


@pytest.mark.django_db
def test_rows_are_the_querysets_rows_for_each_practice_and_shape():
    read = CompiledRead(_page, placeholders=1)
    mine, theirs = OrganizationFactory(), OrganizationFactory()
    for n in range(3):
        PatientFactory(organization=mine, custom_fields={"policy_number": n, "nested": {"a_b": [n, None]}})
    PatientFactory(organization=theirs, date_of_birth=datetime.date(1990, 5, 6))
    for organization in (mine, theirs):
        for shape in ((0, 2), (1, 5), (0, 20)):
            assert read.dicts(shape, organization.pk) == list(_page(organization.pk, *shape))
    assert read.rows((0, 20), theirs.pk) == [tuple(row.values()) for row in _page(theirs.pk, 0, 20)]


@pytest.mark.django_db
def test_a_placeholder_missing_from_the_statement_is_refused():
    read = CompiledRead(lambda organization_id: Patient.objects.unscoped().values("id")[:1], placeholders=1)
    with pytest.raises(ValueError, match="0 times"):
        read.rows((), OrganizationFactory().pk)
