"""Practice reference records patients point at: locations, lead sources, price lists, practitioners.

One small list/create/update surface each under /settings/, built from one class so they behave alike.
Archiving keeps the record (patients keep pointing at it) but hides it from default lists.
"""

from django.db.models.functions import Lower
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from apps.core.serializers import StrictSerializer
from apps.core.views import BaseApiView
from apps.patients.models import LeadSource, Location, Practitioner, PriceList


class ReferenceRecordSerializer(serializers.Serializer):
    id = serializers.UUIDField(read_only=True)
    name = serializers.CharField(min_length=1, max_length=200)
    archived = serializers.BooleanField(required=False, help_text="true archives, false restores.")
    archived_at = serializers.DateTimeField(read_only=True, allow_null=True)
    created_at = serializers.DateTimeField(read_only=True)

    class Meta:
        ref_name = "ReferenceRecord"


class ReferenceRecordWriteSerializer(StrictSerializer, ReferenceRecordSerializer):
    class Meta:
        ref_name = "ReferenceRecordWrite"


class PractitionerSerializer(ReferenceRecordSerializer):
    kind = serializers.ChoiceField(choices=Practitioner.Kind.choices, default=Practitioner.Kind.DENTIST)

    class Meta:
        ref_name = "Practitioner"


class PractitionerWriteSerializer(StrictSerializer, PractitionerSerializer):
    class Meta:
        ref_name = "PractitionerWrite"


class ReferenceListQuerySerializer(StrictSerializer):
    include_archived = serializers.ChoiceField(choices=["true", "false"], required=False)


def _apply(record, data: dict):
    archived = data.pop("archived", None)
    for key, value in data.items():
        setattr(record, key, value)
    if archived is not None:
        record.archived_at = (record.archived_at or timezone.now()) if archived else None
    record.save()
    return record


def reference_views(model, read_serializer, write_serializer, noun: str):
    """(collection view, item view) for one reference model."""
    list_serializer = type(
        f"{model.__name__}ListSerializer",
        (serializers.Serializer,),
        {"items": read_serializer(many=True), "Meta": type("Meta", (), {"ref_name": f"{model.__name__}List"})},
    )

    class Collection(BaseApiView):
        permission = {"GET": "settings:read", "POST": "settings:update"}
        scope_area = "settings"

        @extend_schema(
            tags=["settings"],
            operation_id=f"settings_{noun}_list",
            parameters=[ReferenceListQuerySerializer],
            responses={200: list_serializer},
            summary=f"The practice's {noun.replace('_', ' ')}",
            description=f"Permission settings:read. The practice's {noun.replace('_', ' ')} by name; archived ones "
            "only with includeArchived=true. Patients and other records point at them.",
        )
        def get(self, request):
            query = self.parse_query(ReferenceListQuerySerializer).validated_data
            records = model.objects.for_org(self.organization).order_by(Lower("name"), "id")
            if query.get("include_archived") != "true":
                records = records.filter(archived_at__isnull=True)
            return Response({"items": read_serializer(records, many=True).data})

        @extend_schema(
            tags=["settings"],
            request=write_serializer,
            responses={201: read_serializer},
            summary=f"Add one of the practice's {noun.replace('_', ' ')}",
            description="Permission settings:update. Answers 201 with the new record.",
        )
        def post(self, request):
            data = dict(self.parse_body(write_serializer).validated_data)
            record = _apply(model(organization=self.organization), data)
            return Response(read_serializer(record).data, status=201)

    class Item(BaseApiView):
        permission = {"GET": "settings:read", "PATCH": "settings:update"}
        scope_area = "settings"

        @extend_schema(
            tags=["settings"],
            responses={200: read_serializer},
            summary=f"Read one of the {noun}",
            description="Permission settings:read. Archived records stay readable; another practice's id answers 404.",
        )
        def get(self, request, id):
            return Response(read_serializer(self.get_tenant_object(model, id)).data)

        @extend_schema(
            tags=["settings"],
            request=write_serializer(partial=True),
            responses={200: read_serializer},
            summary=f"Rename, archive or restore one of the {noun}",
            description='Permission settings:update. Any subset of the fields; {"archived": true} archives, false '
            "restores.",
        )
        def patch(self, request, id):
            record = self.get_tenant_object(model, id)
            data = dict(self.parse_body(write_serializer, partial=True).validated_data)
            return Response(read_serializer(_apply(record, data)).data)

    Collection.__name__ = f"{model.__name__}CollectionView"
    Item.__name__ = f"{model.__name__}ItemView"
    return Collection, Item


LOCATIONS = reference_views(Location, ReferenceRecordSerializer, ReferenceRecordWriteSerializer, "locations")
LEAD_SOURCES = reference_views(LeadSource, ReferenceRecordSerializer, ReferenceRecordWriteSerializer, "lead_sources")
PRICE_LISTS = reference_views(PriceList, ReferenceRecordSerializer, ReferenceRecordWriteSerializer, "price_lists")
PRACTITIONERS = reference_views(Practitioner, PractitionerSerializer, PractitionerWriteSerializer, "practitioners")
