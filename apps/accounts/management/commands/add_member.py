from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from apps.accounts import roles, services
from apps.accounts.management.commands._output import write_result
from apps.accounts.models import Organization
from apps.core.errors import ApiError
from apps.core.uuids import parse_uuid


class Command(BaseCommand):
    help = "Add a member to a practice (an existing user gains the membership), optionally with an API key."

    def add_arguments(self, parser):
        parser.add_argument("--organization", required=True, help="The practice id.")
        parser.add_argument("--email", required=True)
        parser.add_argument("--role", required=True, choices=roles.ROLES)
        parser.add_argument(
            "--password",
            default=None,
            help="For a new member; without it the member signs in only after a password reset.",
        )
        parser.add_argument("--name", default="")
        parser.add_argument("--api-key", action="store_true", help="Also create an API key for the member.")
        parser.add_argument("--json", action="store_true", help="Print the result as JSON.")

    def handle(self, *args, **options):
        organization_id = parse_uuid(options["organization"])
        organization = Organization.objects.filter(id=organization_id).first() if organization_id else None
        if organization is None:
            raise CommandError("no practice with that id")
        try:
            with transaction.atomic():
                user, _ = services.user_get_or_create(
                    email=options["email"], password=options["password"], name=options["name"]
                )
                services.membership_add(organization=organization, user=user, role=options["role"])
                key = services.api_key_create(user=user, name="add_member") if options["api_key"] else None
        except ApiError as exc:
            raise CommandError(exc.message) from None
        write_result(
            self,
            {
                "organizationId": str(organization.id),
                "userId": str(user.id),
                "apiKey": key.secret if key else None,
            },
            as_json=options["json"],
        )
