from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin

from apps.accounts.models import ApiKey, Membership, Organization, User
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
    readonly_fields = ("id", "access_generation", "created_at", "updated_at")
    inlines = (MembershipInline,)


@admin.register(Membership)
class MembershipAdmin(TenantAdmin):
    list_display = ("user", "organization", "role", "default_workspace", "created_at")
    list_filter = ("role",)
    search_fields = ("user__email", "organization__name")
    raw_id_fields = ("user", "organization")
    list_select_related = ("user", "organization")


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
