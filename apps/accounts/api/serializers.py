from rest_framework import serializers

from apps.accounts import roles


class EmailPasswordInput(serializers.Serializer):
    email = serializers.EmailField(max_length=254)
    password = serializers.CharField(max_length=256, trim_whitespace=False)


class SignUpInput(EmailPasswordInput):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class UserOutput(serializers.Serializer):
    id = serializers.UUIDField()
    email = serializers.EmailField()
    name = serializers.CharField()


class UserProfileOutput(UserOutput):
    created_at = serializers.DateTimeField()


class SignedInOutput(serializers.Serializer):
    user = UserOutput()
    active_organization_id = serializers.UUIDField(allow_null=True)


class OkOutput(serializers.Serializer):
    ok = serializers.BooleanField()


class ApiKeyCreateInput(serializers.Serializer):
    name = serializers.CharField(max_length=100)


class ApiKeyDeleteInput(serializers.Serializer):
    key_id = serializers.UUIDField()


class ApiKeyOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    start = serializers.CharField(help_text="The first characters of the key, to recognise it.")
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)


class ApiKeyCreatedOutput(ApiKeyOutput):
    key = serializers.CharField(help_text="The secret. Shown once: store it now; it cannot be read again.")


class PmsAccessOutput(serializers.Serializer):
    pms_workspace_available = serializers.BooleanField()
    native_writes_enabled = serializers.BooleanField()
    system_of_record = serializers.CharField()
    authority_generation = serializers.IntegerField()


class MeOrganizationOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    member_role = serializers.ChoiceField(choices=roles.ROLE_CHOICES)
    workspaces = serializers.ListField(child=serializers.ChoiceField(choices=roles.WORKSPACES), min_length=1)
    default_workspace = serializers.ChoiceField(choices=roles.WORKSPACES)
    hide_other_workspace = serializers.BooleanField()
    pms_access = PmsAccessOutput()
    access_generation = serializers.IntegerField(min_value=0)


class MeSessionOutput(serializers.Serializer):
    active_organization_id = serializers.UUIDField(allow_null=True)


class MeOutput(serializers.Serializer):
    user = UserOutput()
    session = MeSessionOutput()
    organization = MeOrganizationOutput(allow_null=True)


class OrganizationSummaryOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    country = serializers.CharField()
    region = serializers.CharField()
    member_role = serializers.ChoiceField(choices=roles.ROLE_CHOICES)
    created_at = serializers.DateTimeField()


class OrganizationListOutput(serializers.Serializer):
    items = OrganizationSummaryOutput(many=True)


class MemberOutput(serializers.Serializer):
    user_id = serializers.UUIDField()
    email = serializers.EmailField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=roles.ROLE_CHOICES)
    joined_at = serializers.DateTimeField()


class MemberListOutput(serializers.Serializer):
    items = MemberOutput(many=True)
