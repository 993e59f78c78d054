"""Tenancy is strict: tenant rows are reached through .for_org(org) only, and every tenant table carries its
practice in its primary access paths (ready for sharding by organization)."""

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import models

from apps.accounts.models import Membership, Organization, User
from apps.core.models import TenantManager, TenantModel, TenantScopeRequired
from tests.factories import MembershipFactory


@pytest.fixture
def two_practices(member_factory):
    first = member_factory(role="owner")
    colleague = member_factory(role="front_desk", organization=first.organization)
    second = member_factory(role="owner")
    return first, colleague, second


# --- the scoped manager -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "use",
    [
        pytest.param(lambda m: list(m.all()), id="all"),
        pytest.param(lambda m: list(m.filter(role="owner")), id="filter"),
        pytest.param(lambda m: list(m.exclude(role="owner")), id="exclude"),
        pytest.param(lambda m: m.count(), id="count"),
        pytest.param(lambda m: m.exists(), id="exists"),
        pytest.param(lambda m: m.first(), id="first"),
        pytest.param(lambda m: m.get(role="nobody"), id="get"),
        pytest.param(lambda m: list(m.values("id")), id="values"),
        pytest.param(lambda m: list(m.order_by("created_at")), id="order_by"),
        pytest.param(lambda m: m.update(role="owner"), id="update"),
        pytest.param(lambda m: m.all().delete(), id="delete"),
        pytest.param(lambda m: list(m.select_related("user")), id="select_related"),
        pytest.param(lambda m: m.aggregate(n=models.Count("id")), id="aggregate"),
        pytest.param(lambda m: list(m.iterator()), id="iterator"),
    ],
)
def test_default_manager_refuses_unscoped_queries(two_practices, use):
    with pytest.raises(TenantScopeRequired):
        use(Membership.objects)

    assert Membership.objects.unscoped().count() == 3  # nothing was changed either


def test_for_org_returns_only_that_practice(two_practices):
    first, colleague, second = two_practices

    rows = Membership.objects.for_org(first.organization)

    assert {m.id for m in rows} == {first.membership.id, colleague.membership.id}
    assert {m.id for m in Membership.objects.for_org(second.organization)} == {second.membership.id}


def test_for_org_accepts_an_organization_id(two_practices):
    first, colleague, _ = two_practices

    assert {m.id for m in Membership.objects.for_org(first.organization.id)} == {
        first.membership.id,
        colleague.membership.id,
    }


def test_for_org_narrows_further_and_never_widens(two_practices):
    first, _, second = two_practices

    rows = Membership.objects.for_org(first.organization).filter(user=second.user)

    assert list(rows) == []
    assert Membership.objects.for_org(first.organization).filter(role="front_desk").count() == 1


@pytest.mark.parametrize(
    "organization", [lambda: None, lambda: Organization(id=None)], ids=["none", "organization-without-pk"]
)
def test_for_org_without_an_organization_raises(db, organization):
    with pytest.raises(TenantScopeRequired):
        Membership.objects.for_org(organization())


def test_unscoped_sees_every_practice(two_practices):
    first, colleague, second = two_practices

    assert {m.id for m in Membership.objects.unscoped()} == {
        first.membership.id,
        colleague.membership.id,
        second.membership.id,
    }


def test_related_managers_work(two_practices):
    first, _, second = two_practices

    assert [m.id for m in first.user.memberships.all()] == [first.membership.id]
    assert first.user.memberships.count() == 1
    assert first.user.memberships.filter(organization=second.organization).exists() is False


def test_prefetch_through_related_managers_works(two_practices):
    first, _, _ = two_practices

    [user] = User.objects.filter(id=first.user.id).prefetch_related("memberships")

    assert [m.id for m in user.memberships.all()] == [first.membership.id]


def test_forward_foreign_keys_to_tenant_rows_and_refresh_work(two_practices):
    first, _, _ = two_practices
    membership = Membership.objects.for_org(first.organization).get(user=first.user)

    membership.role = "manager"
    membership.save()
    membership.refresh_from_db()

    assert membership.role == "manager"
    assert membership.organization == first.organization


def test_model_validation_works_under_the_scoped_manager(two_practices):
    """full_clean() runs the unique checks admin forms and ModelForms rely on; the scoped manager must not break
    them: a duplicate is a ValidationError, a new row validates."""
    first, _, second = two_practices

    duplicate = Membership(organization=first.organization, user=first.user, role="owner")
    with pytest.raises(ValidationError):
        duplicate.full_clean()

    Membership(organization=first.organization, user=second.user, role="owner", default_workspace="crm").full_clean()


def test_factory_children_stay_in_the_given_practice(two_practices):
    first, _, _ = two_practices

    membership = MembershipFactory(organization=first.organization)

    assert membership.organization_id == first.organization.id


# --- every tenant model has the shape ---------------------------------------------------------------------------


def _tenant_models() -> list[type[models.Model]]:
    found = [
        model
        for model in apps.get_models()
        if issubclass(model, TenantModel) and not model._meta.abstract and not model._meta.proxy
    ]
    return sorted(found, key=lambda model: model._meta.label)


TENANT_MODELS = _tenant_models()


def test_the_known_tenant_models_are_found():
    labels = {model._meta.label for model in TENANT_MODELS}

    assert {"accounts.Membership", "events.Event"} <= labels


@pytest.mark.parametrize("model", TENANT_MODELS, ids=lambda model: model._meta.label)
def test_tenant_model_shape(model):
    organization = model._meta.get_field("organization")
    assert isinstance(organization, models.ForeignKey)
    assert organization.remote_field.model is Organization
    assert organization.null is False

    assert isinstance(model._meta.pk, models.UUIDField)
    assert model._meta.pk.name == "id"

    created_at = model._meta.get_field("created_at")
    updated_at = model._meta.get_field("updated_at")
    assert isinstance(created_at, models.DateTimeField) and created_at.auto_now_add
    assert isinstance(updated_at, models.DateTimeField) and updated_at.auto_now

    # `objects` is the scoped entry point our code uses (Django's machinery may use a plain first manager).
    assert isinstance(model.objects, TenantManager)
    with pytest.raises(TenantScopeRequired):
        model.objects.all()


# Indexes that deliberately do not lead with organization, and why.
LEADING_ORGANIZATION_EXEMPT = {
    # Every request resolves the caller's practice from their memberships (a lookup by user across practices);
    # in the Citus layout memberships are a reference table beside users, not a sharded one.
    "accounts_membership_user_idx",
    "autom_rule_due_idx",  # the automations' schedule sweep: enabled schedule rules whose tick has come
    "reports_sub_due_idx",  # the report subscriptions' sending sweep: enabled subscriptions by next due time
    # Background sweeps that work across every practice (fan-out of new events, due deliveries, 30-day purge):
    # small partial indexes over the work still to do; under Citus they run per shard.
    "events_pending_fanout_idx",
    "webhooks_delivery_due_idx",
    "webhooks_delivery_done_idx",
    "capture_submission_retry_idx",
    "conv_delivery_pending_idx",
    "conv_attachment_pending_idx",
    "conv_message_queued_idx",  # the senders' sweep: queued messages whose time has come
    "campaigns_active_idx",  # the release sweep: scheduled and sending campaigns
    "tasks_open_assigned_due_idx",  # the task-due notifications sweep
    "notif_created_idx",  # the retention purge
    "notif_task_due_at_idx",  # the retention purge of task-due notices
    "deposits_sent_expiry_idx",  # the expiry sweep of sent deposit links
    # The payment platform's callbacks name a payment intent or a connected account, not a practice: the routing
    # lookups that find the practice.
    "deposits_pi_idx",
    "deposits_account_id_idx",
    # A message deleted with its conversation (erasure) clears its recipient's link: Django's SET_NULL looks the
    # recipients up by message id alone.
    "campaigns_recip_message_idx",
    # The dialer's sweeps: recordings still to download, stored recordings still to delete (erasure), telephony
    # events still to process, and the retention purge of settled ones.
    "dialer_recording_pending_idx",
    "dialer_recording_del_idx",
    "dialer_event_sweep_idx",
    "dialer_event_done_idx",
    # AI Voice's sweep: transcripts and summaries whose job was lost (requeued, at most three attempts).
    "voice_transcript_open_idx",
    "voice_summary_open_idx",
    # The ad platform's deauthorize and data-deletion callbacks name the platform user who granted the page tokens,
    # not a practice: the lookup that finds their connections in every practice.
    "leadads_conn_user_idx",
    # The connected PMS's sweep: callback receipts still to process (a lost task, a broker outage).
    "pms_receipt_waiting_idx",
    # Recalls: the reminder sweep (due recalls whose reminder moment has come) and the waitlist's expiry sweep (open
    # offers past their expiry).
    "recalls_reminder_due_idx",
    "recalls_offer_open_idx",
}


# Unique constraints that deliberately span practices, and why.
UNIQUE_ACROSS_PRACTICES = {
    # A number, address or account receives for one practice at a time: callbacks for it are routed by it (a
    # routing table, a reference table under Citus).
    "conv_connection_address_unique",
    # A page, ad account or advertiser is connected to one practice at a time: lead callbacks are routed by it.
    "leadads_connection_external_unique",
}


def _leading_name(index) -> str:
    if index.fields:
        return index.fields[0].lstrip("-")
    first = index.expressions[0]
    while not isinstance(first, models.F):  # OrderBy(F(...)), OpClass(F(...)), ...
        first = first.get_source_expressions()[0]
    return first.name


def _declared_indexes():
    for model in TENANT_MODELS:
        for index in model._meta.indexes:
            if index.name not in LEADING_ORGANIZATION_EXEMPT:
                yield pytest.param(model, index, id=f"{model._meta.label}:{index.name}")


def _declared_unique_constraints():
    for model in TENANT_MODELS:
        for constraint in model._meta.constraints:
            if (
                isinstance(constraint, models.UniqueConstraint)
                and constraint.fields
                and constraint.name not in UNIQUE_ACROSS_PRACTICES
            ):
                yield pytest.param(model, constraint, id=f"{model._meta.label}:{constraint.name}")
        for fields in model._meta.unique_together:
            yield pytest.param(model, models.UniqueConstraint(fields=fields, name="unique_together"), id="together")


@pytest.mark.parametrize(("model", "index"), list(_declared_indexes()))
def test_tenant_indexes_lead_with_organization(model, index):
    assert _leading_name(index) == "organization", (
        f"{model._meta.label} index {index.name} on {index.fields} must lead with organization"
    )


@pytest.mark.parametrize(("model", "constraint"), list(_declared_unique_constraints()))
def test_tenant_unique_constraints_include_organization(model, constraint):
    assert "organization" in constraint.fields, (
        f"{model._meta.label} unique constraint {constraint.name} on {constraint.fields} must include organization"
    )
