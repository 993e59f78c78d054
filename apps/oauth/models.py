"""OAuth: DOT's Grant, AccessToken and RefreshToken swapped in to carry the practice and the connection, plus the
connection itself and what we know about each client application.

A connection is one person's consent for one app, bound to exactly one practice for life. Tokens only ever act
as that person in that practice, narrowed by their scopes; disconnecting revokes every token of the connection.
Tokens are stored hashed (DOT's token_checksum; the token column stays empty).
"""

from django.conf import settings
from django.db import models
from oauth2_provider.models import AbstractAccessToken, AbstractGrant, AbstractRefreshToken

from apps.core.models import TenantModel


class Connection(TenantModel):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oauth_connections")
    application = models.ForeignKey(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL, on_delete=models.CASCADE, related_name="connections"
    )
    scopes = models.TextField(help_text="The scopes granted at the last consent, space separated.")
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="oauth_connection_org_idx"),
            models.Index(fields=["organization", "user", "application"], name="oauth_connection_user_app_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.application_id} for {self.user_id} in {self.organization_id}"


class ClientProfile(models.Model):
    """What DOT's Application does not hold: whether a person has ever approved a dynamically registered client
    (unapproved registrations are removed after 24 hours)."""

    application = models.OneToOneField(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="profile"
    )
    approved_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"profile of {self.application_id}"


class Grant(AbstractGrant):
    """An authorization code. Kept once exchanged (exchanged_at set) rather than deleted, so a replay finds the
    tokens it bought (RFC 6749 §4.1.2: refuse, and revoke them)."""

    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, null=True, related_name="+")
    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, null=True, related_name="+")
    exchanged_at = models.DateTimeField(null=True, blank=True)


class AccessToken(AbstractAccessToken):
    # Null only for DCR registration tokens, which never authenticate API requests.
    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, null=True, related_name="+")
    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, null=True, related_name="access_tokens")
    # The code this token descends from (through any number of refreshes): a replay of that code revokes it.
    grant = models.ForeignKey(Grant, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    def connection_is_active(self) -> bool:
        """Re-read (a disconnect may land mid-request): used by long-running work such as subscriptions."""
        return Connection.objects.unscoped().filter(pk=self.connection_id, revoked_at__isnull=True).exists()


class RefreshToken(AbstractRefreshToken):
    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, null=True, related_name="+")
    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, null=True, related_name="refresh_tokens")
    grant = models.ForeignKey(Grant, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
