"""Wire shapes of data transfer and the practice archive (camelCase on the wire; snake_case here)."""

from rest_framework import serializers

from apps.core.naming import to_camel
from apps.core.serializers import OffsetQuerySerializer, StrictSerializer, offset_page_serializer
from apps.patients.public import IMPORT_FIELDS
from apps.transfer.files import MAX_HEADER_LENGTH
from apps.transfer.models import DATASETS, ArchiveStatus, ExportPurpose, ExportStatus, ImportFormat, ImportStatus

REQUIRED_MAPPING = ("externalId", "firstName")
SOURCE_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,63}$"


class ImportUploadSerializer(serializers.Serializer):
    """multipart/form-data (documentation of the upload; the view reads the parts itself)."""

    file = serializers.FileField(help_text="The CSV file: UTF-8 (a BOM is fine), a header row, at most 50 MiB.")
    format = serializers.ChoiceField(choices=ImportFormat.choices, required=False, default=ImportFormat.CSV)
    source = serializers.RegexField(
        SOURCE_PATTERN,
        required=False,
        help_text="The external-id namespace (default: the format). Re-imports with the same source update.",
    )

    class Meta:
        ref_name = "ImportUpload"


class ImportMappingSerializer(StrictSerializer):
    mapping = serializers.DictField(
        child=serializers.CharField(max_length=MAX_HEADER_LENGTH),
        help_text=f"Patient field → column of the file. Fields: {', '.join(IMPORT_FIELDS)}. externalId and "
        "firstName are required, and one of email or phoneMobile.",
    )
    source = serializers.RegexField(SOURCE_PATTERN, required=False)

    class Meta:
        ref_name = "ImportMapping"

    def validate_mapping(self, value):
        # The JSON parser turns keys to snake_case; the patient fields are named as on the wire.
        value = {to_camel(key): column for key, column in value.items()}
        unknown = sorted(set(value) - set(IMPORT_FIELDS))
        if unknown:
            raise serializers.ValidationError(f"unknown patient fields: {', '.join(unknown)}")
        missing = [name for name in REQUIRED_MAPPING if name not in value]
        if missing:
            raise serializers.ValidationError(f"map a column to {', '.join(missing)}")
        if "email" not in value and "phoneMobile" not in value:
            raise serializers.ValidationError("map a column to email or phoneMobile")
        columns = self.context["columns"]
        absent = sorted({column for column in value.values() if column not in columns})
        if absent:
            raise serializers.ValidationError(f"not columns of the file: {', '.join(absent)}")
        if len(set(value.values())) != len(value):
            raise serializers.ValidationError("a column may be mapped to one field only")
        return value


class ImportProgressSerializer(serializers.Serializer):
    rows_done = serializers.IntegerField()
    rows_total = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    skipped = serializers.IntegerField()
    failed = serializers.IntegerField()

    class Meta:
        ref_name = "ImportProgress"


class ImportValidationSerializer(serializers.Serializer):
    rows_valid = serializers.IntegerField()
    rows_invalid = serializers.IntegerField()
    problems_total = serializers.IntegerField()

    class Meta:
        ref_name = "ImportValidation"


class ImportSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    format = serializers.ChoiceField(choices=ImportFormat.choices)
    source = serializers.CharField()
    file_name = serializers.CharField()
    size_bytes = serializers.IntegerField()
    status = serializers.ChoiceField(choices=ImportStatus.choices)
    columns = serializers.ListField(child=serializers.CharField())
    mapping = serializers.DictField(child=serializers.CharField())
    rows_total = serializers.IntegerField()
    validation = ImportValidationSerializer(allow_null=True)
    progress = ImportProgressSerializer()
    error_code = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "PatientImport"


class ImportDetailSerializer(ImportSerializer):
    preview = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField(allow_blank=True)),
        help_text="The first five rows: cells in the order of columns.",
    )

    class Meta:
        ref_name = "PatientImportDetail"


class ImportListSerializer(serializers.Serializer):
    items = ImportSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "PatientImportList"


class ProblemSerializer(serializers.Serializer):
    row = serializers.IntegerField(help_text="Spreadsheet row number: the header is row 1.")
    column = serializers.CharField(help_text="The file's column (empty: the whole row).")
    field = serializers.CharField(help_text="The patient field it maps to (empty: the whole row).")
    problem = serializers.CharField()

    class Meta:
        ref_name = "ImportProblem"


ProblemPageSerializer = offset_page_serializer(ProblemSerializer, "ImportProblemPage")


class DryRunSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="Unchanged, or the patient is archived or merged away.")
    failed = serializers.IntegerField(help_text="Rows with problems (see the validation report).")

    class Meta:
        ref_name = "ImportDryRun"


class ExportCreateSerializer(StrictSerializer):
    datasets = serializers.ListField(
        child=serializers.ChoiceField(choices=DATASETS),
        min_length=1,
        max_length=len(DATASETS),
        required=False,
        help_text=f"Any of {', '.join(DATASETS)}; all when left out.",
    )

    class Meta:
        ref_name = "ExportCreate"


class ExportSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    purpose = serializers.ChoiceField(choices=ExportPurpose.choices)
    datasets = serializers.ListField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=ExportStatus.choices)
    progress = serializers.DictField(child=serializers.IntegerField(), help_text="{rowsDone, rowsTotal}")
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="Rows per dataset, when ready.")
    size_bytes = serializers.IntegerField()
    download_url = serializers.CharField(allow_null=True, help_text="Signed; valid 24 hours from this read.")
    download_expires_at = serializers.DateTimeField(allow_null=True)
    file_expires_at = serializers.DateTimeField(allow_null=True, help_text="When the file is deleted (retention).")
    created_at = serializers.DateTimeField()
    ready_at = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "DataExport"


class ExportListSerializer(serializers.Serializer):
    items = ExportSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "DataExportList"


class DownloadQuerySerializer(StrictSerializer):
    token = serializers.CharField(max_length=1000)

    class Meta:
        ref_name = "ExportDownloadQuery"


class ProblemQuerySerializer(OffsetQuerySerializer):
    class Meta:
        ref_name = "ImportProblemQuery"


class ArchiveSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=ArchiveStatus.choices)
    closes_at = serializers.DateTimeField()
    cancelled_at = serializers.DateTimeField(allow_null=True)
    closed_at = serializers.DateTimeField(allow_null=True)
    export = ExportSerializer(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "PracticeArchive"


class ArchiveStateSerializer(serializers.Serializer):
    archive = ArchiveSerializer(allow_null=True, help_text="The latest archive; null when none was ever asked.")

    class Meta:
        ref_name = "PracticeArchiveState"
