from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin

from apps.accounts.models import (
    ApiKey,
    Invitation,
    Membership,
    Organization,
    SecondFactorGuard,
    TotpDevice,
    User,
)
from apps.accounts.services import team
from apps.core.admin import TenantAdmin, TenantInline


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    ordering = ("email",)
    list_display = ("email", "name", "is_active", "is_staff", "created_at")
    search_fields = ("email", "name")
    list_filter = ("is_active", "is_staff")
    readonly_fields = ("created_at", "updated_at", "last_login")
    fieldsets = (
        (None, {"fields": ("email", "password", "name")}),
        ("Access", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Dates", {"fields": ("last_login", "created_at", "updated_at")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "name", "password1", "password2")}),)


# What a member may open: a change moves their access generation (clients refresh /auth/me).
MEMBER_ACCESS_FIELDS = {"role", "default_workspace", "hide_other_workspace"}


class MembershipInline(TenantInline):
    model = Membership
    extra = 0
    fields = ("user", "role", "default_workspace", "hide_other_workspace", "created_at")
    readonly_fields = ("created_at",)
    raw_id_fields = ("user",)


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "country", "region", "clinical_workspace_available", "created_at")
    list_filter = ("kind", "region", "clinical_workspace_available")
    search_fields = ("name", "id")
    readonly_fields = ("id", "access_generation", "logo", "created_at", "updated_at")
    inlines = (MembershipInline,)

    def save_formset(self, request, form, formset, change):
        super().save_formset(request, form, formset, change)
        if formset.model is Membership:
            team.member_access_changed(
                f.instance.pk for f in formset.forms if f.instance.pk and set(f.changed_data) & MEMBER_ACCESS_FIELDS
            )

    def save_model(self, request, obj, form, change):
        """Entitlement changes go through the service, which moves the practice's access generation."""
        entitlements = {f: form.cleaned_data[f] for f in team.ENTITLEMENT_FIELDS if f in form.changed_data}
        if change and entitlements:
            for name in entitlements:
                setattr(obj, name, form.initial.get(name))
            super().save_model(request, obj, form, change)
            team.organization_update_entitlements(organization=obj, **entitlements)
            obj.refresh_from_db()
        else:
            super().save_model(request, obj, form, change)


@admin.register(Membership)
class MembershipAdmin(TenantAdmin):
    list_display = ("user", "organization", "role", "default_workspace", "created_at")
    list_filter = ("role",)
    search_fields = ("user__email", "organization__name")
    raw_id_fields = ("user", "organization")
    list_select_related = ("user", "organization")

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and set(form.changed_data) & MEMBER_ACCESS_FIELDS:
            team.member_access_changed([obj.pk])


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """The digest is never shown: staff see who owns a key and may revoke it, nothing more."""

    list_display = ("name", "start", "user", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "user__email", "start")
    fields = ("user", "name", "start", "created_at", "last_used_at", "expires_at", "revoked_at")
    readonly_fields = ("user", "name", "start", "created_at", "last_used_at")
    list_select_related = ("user",)

    def has_add_permission(self, request):
        return False  # keys are created by their owner, who alone sees the secret


@admin.register(Invitation)
class InvitationAdmin(TenantAdmin):
    list_display = ("email", "organization", "role", "status", "expires_at", "created_at")
    list_filter = ("status", "role")
    search_fields = ("email", "organization__name")
    raw_id_fields = ("organization", "inviter")
    readonly_fields = ("created_at", "updated_at", "responded_at")
    list_select_related = ("organization",)


@admin.register(TotpDevice)
class TotpDeviceAdmin(admin.ModelAdmin):
    """Support can see whether a person has an authenticator and remove it (after verifying who asks); the key is
    never shown."""

    list_display = ("user", "confirmed", "created_at", "expires_at")
    list_filter = ("confirmed",)
    search_fields = ("user__email",)
    fields = ("user", "name", "confirmed", "created_at", "expires_at", "failures")
    readonly_fields = fields
    list_select_related = ("user",)

    def has_add_permission(self, request):
        return False


@admin.register(SecondFactorGuard)
class SecondFactorGuardAdmin(admin.ModelAdmin):
    """Lockouts of second-factor guessing; support may clear one."""

    list_display = ("user", "sign_in_failures", "sign_in_locked_until", "replacement_paused_until")
    search_fields = ("user__email",)
    raw_id_fields = ("user",)
    list_select_related = ("user",)
