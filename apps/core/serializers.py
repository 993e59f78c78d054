from djangorestframework_camel_case.util import camelize
from rest_framework import serializers


class StrictSerializer(serializers.Serializer):
    """Refuses keys it does not know, naming them (a typo must not be silently ignored)."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            unknown = sorted(set(data) - writable)
            if unknown:
                names = list(camelize({name: None for name in unknown}))
                raise serializers.ValidationError({name: ["is not a field you can send here"] for name in names})
        return super().to_internal_value(data)
