from rest_framework import serializers


class ConnectedAppOutput(serializers.Serializer):
    id = serializers.UUIDField()
    application_name = serializers.CharField()
    client_id = serializers.CharField()
    verified = serializers.BooleanField(help_text="False for apps that registered themselves (dynamic registration).")
    scopes = serializers.ListField(child=serializers.CharField())
    user_id = serializers.UUIDField()
    user_name = serializers.CharField()
    user_email = serializers.EmailField()
    mine = serializers.BooleanField(help_text="Whether you authorized it.")
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
