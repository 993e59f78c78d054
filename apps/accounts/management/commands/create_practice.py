from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from apps.accounts import services
from apps.accounts.management.commands._output import write_result
from apps.core.errors import ApiError


class Command(BaseCommand):
    help = "Create a practice with its owner (an existing user becomes the owner), optionally with an API key."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--owner-email", required=True)
        parser.add_argument(
            "--owner-password",
            default=None,
            help="For a new owner; without it the owner signs in only after a password reset.",
        )
        parser.add_argument("--owner-name", default="")
        parser.add_argument("--country", default="", help="ISO 3166-1 alpha-2, e.g. IT")
        parser.add_argument("--clinical", action="store_true", help="The practice has the clinical workspace.")
        parser.add_argument("--api-key", action="store_true", help="Also create an API key for the owner.")
        parser.add_argument("--json", action="store_true", help="Print the result as JSON.")

    def handle(self, *args, **options):
        country = options["country"].strip()
        if country and (len(country) != 2 or not country.isalpha()):
            raise CommandError("--country must be a two-letter ISO code")
        try:
            with transaction.atomic():
                owner, _ = services.user_get_or_create(
                    email=options["owner_email"],
                    password=options["owner_password"],
                    name=options["owner_name"],
                )
                organization = services.organization_create(
                    name=options["name"], owner=owner, country=country, clinical=options["clinical"]
                )
                key = services.api_key_create(user=owner, name="create_practice") if options["api_key"] else None
        except ApiError as exc:
            raise CommandError(exc.message) from None
        write_result(
            self,
            {
                "organizationId": str(organization.id),
                "userId": str(owner.id),
                "apiKey": key.secret if key else None,
            },
            as_json=options["json"],
        )
