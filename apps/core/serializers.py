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


class OffsetQuerySerializer(StrictSerializer):
    """The limit and offset of an offset-paged list; list query serializers add their filters to it."""

    limit = serializers.IntegerField(min_value=1, max_value=100, default=25)
    offset = serializers.IntegerField(min_value=0, max_value=1_000_000, default=0)


def offset_page_serializer(item_serializer: type[serializers.Serializer], ref_name: str) -> type:
    """The response schema of an offset-paged list of `item_serializer`: exactly {items, total, limit, offset}."""
    fields = {
        "items": item_serializer(many=True),
        "total": serializers.IntegerField(),
        "limit": serializers.IntegerField(),
        "offset": serializers.IntegerField(),
        "Meta": type("Meta", (), {"ref_name": ref_name}),
    }
    return type(f"{ref_name}Serializer", (serializers.Serializer,), fields)


class NonEmptyPatchSerializer(StrictSerializer):
    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("send at least one field to change")
        return attrs
