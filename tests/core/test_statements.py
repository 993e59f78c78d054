"""apps.core.statements.CompiledRead: the remembered statement returns what the queryset returns (converters
included), per practice, and a placeholder that does not reach the statement exactly once is refused."""

import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

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


def _prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


@pytest.mark.django_db
def test_a_compiled_read_is_prepared_once_per_connection_and_still_captured():
    read = CompiledRead(_page, placeholders=1, prepared=True)
    organization = OrganizationFactory()
    PatientFactory(organization=organization)
    with CaptureQueriesContext(connection) as captured:
        first = read.dicts((0, 5), organization.pk)
        second = read.dicts((0, 5), organization.pk)
    assert first == second == list(_page(organization.pk, 0, 5))
    # Django's debug cursor sees prepared statements too, with their values written in, as for its own cursors.
    assert [query["sql"].count(organization.pk.hex) for query in captured.captured_queries] == [1, 1]
    sql = read._shape((0, 5)).sql
    assert [s for s in _prepared_statements() if s.startswith(sql.split(" WHERE ")[0])], "not prepared"


def test_the_credential_statement_is_prepared(owner):
    client = owner.api_client()
    for _ in range(2):
        assert client.get("/auth/me").status_code == 200
    assert any('FROM "accounts_apikey" k' in statement for statement in _prepared_statements())


@pytest.mark.django_db
def test_prepared_reads_can_be_turned_off(settings):
    settings.SVC_DB_PREPARED_READS = False
    read = CompiledRead(_page, placeholders=1, prepared=True)
    organization = OrganizationFactory()
    before = len(_prepared_statements())
    assert read.dicts((0, 7), organization.pk) == []
    assert len(_prepared_statements()) == before


@pytest.mark.django_db
def test_a_compiled_read_not_marked_prepared_stays_on_djangos_cursor():
    read = CompiledRead(_page, placeholders=1)
    organization = OrganizationFactory()
    before = len(_prepared_statements())
    assert read.dicts((0, 9), organization.pk) == read.dicts((0, 9), organization.pk) == []
    assert len(_prepared_statements()) == before
