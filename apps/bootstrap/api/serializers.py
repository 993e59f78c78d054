"""Wire shape of GET /bootstrap (documentation of the selector's dict; snake_case here, camelCase on the wire)."""

from rest_framework import serializers

from apps.accounts import roles


class BootstrapPracticeOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    country = serializers.CharField(help_text="ISO 3166-1 alpha-2; empty when not set.")
    region = serializers.CharField(help_text="eu or us: where the practice's data lives.")
    timezone = serializers.CharField(help_text="IANA name; 'today' and the calendar are reckoned in it.")
    currency = serializers.CharField(help_text="ISO 4217, from the country (EUR when unknown).")


class BootstrapUserOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    email = serializers.EmailField()


class BootstrapFeaturesOutput(serializers.Serializer):
    lead_ads = serializers.BooleanField(help_text="A lead-ad connection is connected.")
    website = serializers.BooleanField(help_text="An active website with an allowed domain and a usable form.")
    widget = serializers.BooleanField(help_text="An active chat widget.")
    dialer = serializers.BooleanField(help_text="An active telephony (dialer) connection.")
    ai_voice = serializers.BooleanField(help_text="AI Voice is switched on.")
    reputation = serializers.BooleanField(help_text="An active review source.")
    email_domains = serializers.BooleanField(help_text="An active e-mail channel connection.")
    clinical_workspace = serializers.BooleanField(help_text="The practice has the clinical workspace.")


class BucketOutput(serializers.Serializer):
    burst = serializers.IntegerField()
    refill_per_second = serializers.FloatField()


class BootstrapLimitsOutput(serializers.Serializer):
    api_credential_requests = BucketOutput(help_text="Per API key or OAuth connection; 429 with Retry-After.")
    request_body_bytes = serializers.IntegerField(help_text="The largest request body of any route.")
    json_body_bytes = serializers.IntegerField(help_text="The largest JSON body of an ordinary route (413 past it).")
    image_upload_bytes = serializers.IntegerField(help_text="Avatar and logo uploads.")
    webhook_endpoints = serializers.IntegerField(help_text="Non-archived outbound webhook endpoints per practice.")
    mcp_reply_bytes = serializers.IntegerField(help_text="An MCP reply larger than this comes in parts.")
    feed_page_size = serializers.IntegerField(help_text="The largest limit of a newest-first (cursor) list.")


class BootstrapOutput(serializers.Serializer):
    practice = BootstrapPracticeOutput()
    user = BootstrapUserOutput()
    role = serializers.ChoiceField(choices=roles.ROLES)
    permissions = serializers.ListField(child=serializers.CharField(), help_text="The role's permissions, sorted.")
    workspaces = serializers.ListField(child=serializers.ChoiceField(choices=roles.WORKSPACES))
    default_workspace = serializers.ChoiceField(choices=roles.WORKSPACES)
    clinical_workspace_available = serializers.BooleanField()
    features = BootstrapFeaturesOutput()
    limits = BootstrapLimitsOutput()
    pending_agreements = serializers.IntegerField(
        help_text="Agreement versions the practice has still to accept (an owner does, at /agreements)."
    )
