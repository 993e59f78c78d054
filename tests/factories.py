"""factory-boy factories. Children stay in their parent's practice."""

import factory

from apps.accounts import roles
from apps.accounts.models import Membership, Organization, User

DEFAULT_PASSWORD = "correct-horse-battery-9"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"person{n}@example.com")
    name = factory.Faker("name")
    password = factory.PostGenerationMethodCall("set_password", DEFAULT_PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organization

    name = factory.Sequence(lambda n: f"Practice {n}")
    country = "IT"
    region = "eu"


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    organization = factory.SubFactory(OrganizationFactory)
    user = factory.SubFactory(UserFactory)
    role = roles.OWNER

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return model_class.objects.unscoped().create(*args, **kwargs)


# --- patients --------------------------------------------------------------------------------------------------


class TenantChildFactory(factory.django.DjangoModelFactory):
    """Base for tenant rows: `organization` is required and every related record stays in it."""

    class Meta:
        abstract = True
        skip_postgeneration_save = True

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return model_class.objects.create(*args, **kwargs)


class LocationFactory(TenantChildFactory):
    class Meta:
        model = "patients.Location"

    name = factory.Sequence(lambda n: f"Location {n}")


class LeadSourceFactory(TenantChildFactory):
    class Meta:
        model = "patients.LeadSource"

    name = factory.Sequence(lambda n: f"Source {n}")


class PriceListFactory(TenantChildFactory):
    class Meta:
        model = "patients.PriceList"

    name = factory.Sequence(lambda n: f"Price list {n}")


class PractitionerFactory(TenantChildFactory):
    class Meta:
        model = "patients.Practitioner"

    name = factory.Faker("name")


class TagFactory(TenantChildFactory):
    class Meta:
        model = "patients.Tag"

    name = factory.Sequence(lambda n: f"Tag {n}")


class PatientFactory(TenantChildFactory):
    class Meta:
        model = "patients.Patient"
        skip_postgeneration_save = True

    first_name = factory.Faker("first_name")
    last_name = factory.Faker("last_name")
    email = factory.Sequence(lambda n: f"patient{n}@example.com")
    phone_mobile = factory.Sequence(lambda n: f"+39 333 {n:07d}")
    status = "lead"

    @factory.post_generation
    def tags(obj, create, extracted, **kwargs):
        if create and extracted:
            from apps.patients.models import PatientTag

            PatientTag.objects.bulk_create(
                [PatientTag(organization_id=obj.organization_id, patient=obj, tag=tag) for tag in extracted]
            )
