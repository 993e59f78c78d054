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
