"""Import files: checked on upload (UTF-8 with or without a BOM, a header row, at least one data row, at most
MAX_IMPORT_BYTES and MAX_IMPORT_ROWS), stored through Django's storage API (`storages[SVC_MEDIA_STORAGE_ALIAS]`, the
filesystem or an S3-compatible bucket) under transfer/<practice>/imports/<import id>.csv — no personal data in the
name — and read back row by row (never whole into memory).

Formats: `csv` (any header; a mapping is suggested from the header names) and `dentally` (the patient CSV of a
UK dental PMS: its column names are known, so the mapping is complete on upload)."""

import codecs
import csv
import io
import re
from collections.abc import Iterator

from django.conf import settings
from django.core.files.storage import storages

from apps.transfer.errors import ImportFileInvalid, ImportFileTooLarge
from apps.transfer.models import ImportFormat

MIB = 1024 * 1024
MAX_IMPORT_BYTES = 50 * MIB
MAX_IMPORT_ROWS = 500_000
MAX_COLUMNS = 200
MAX_HEADER_LENGTH = 200
PREVIEW_ROWS = 5
# csv's own cap on one cell (the default 128 KiB); a longer cell is a refused file, not a crash.
csv.field_size_limit(1 * MIB)

# Header names (compared lower-case, letters and digits only) that suggest each patient field.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "externalId": ("externalid", "id", "patientid", "patientno", "patientnumber", "recordid", "pmsid", "chartno"),
    "title": ("title", "salutation"),
    "firstName": ("firstname", "forename", "givenname", "first"),
    "lastName": ("lastname", "surname", "familyname", "last"),
    "email": ("email", "emailaddress", "mail"),
    "phoneMobile": ("phonemobile", "mobile", "mobilephone", "mobilenumber", "cell", "cellphone", "phone"),
    "phoneOther": ("phoneother", "homephone", "telephone", "landline", "workphone", "otherphone"),
    "dateOfBirth": ("dateofbirth", "dob", "birthdate", "birthday"),
    "gender": ("gender", "sex"),
    "addressLine1": ("addressline1", "address1", "address", "street", "addressline"),
    "addressLine2": ("addressline2", "address2"),
    "city": ("city", "town", "posttown"),
    "province": ("province", "county", "state", "region"),
    "postalCode": ("postalcode", "postcode", "zip", "zipcode"),
    "country": ("country",),
    "status": ("status",),
    "leadSource": ("leadsource", "source", "referralsource"),
    "note": ("note", "notes", "comment", "comments"),
    "smsOptOut": ("smsoptout",),
    "emailOptOut": ("emailoptout",),
}

# The patient export of a UK dental PMS (Dentally: the field names of its patient records, as its CSV export
# headers carry them). A file of this format must have the first three; the rest are mapped when present.
DENTALLY_COLUMNS = {
    "externalId": "id",
    "firstName": "first_name",
    "lastName": "last_name",
    "title": "title",
    "dateOfBirth": "date_of_birth",
    "gender": "gender",
    "email": "email_address",
    "phoneMobile": "mobile_phone",
    "phoneOther": "home_phone",
    "addressLine1": "address_line_1",
    "addressLine2": "address_line_2",
    "city": "town",
    "province": "county",
    "postalCode": "postcode",
}
DENTALLY_REQUIRED = ("id", "first_name", "last_name")


def media_storage():
    return storages[settings.SVC_MEDIA_STORAGE_ALIAS]


def storage_name(*, organization_id, import_id) -> str:
    return f"transfer/{organization_id}/imports/{import_id}.csv"


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def suggest_mapping(columns: list[str], file_format: str) -> dict[str, str]:
    """Patient field (wire name) → column: exact for the PMS format, by header-name synonyms for plain CSV (each
    column used once, first match wins)."""
    if file_format == ImportFormat.DENTALLY:
        return {field: column for field, column in DENTALLY_COLUMNS.items() if column in columns}
    keyed = {_key(column): column for column in reversed(columns)}
    mapping, used = {}, set()
    for field, names in SYNONYMS.items():
        for name in names:
            column = keyed.get(name)
            if column is not None and column not in used:
                mapping[field] = column
                used.add(column)
                break
    return mapping


class _Lines(io.RawIOBase):
    """A binary file as a raw stream (TextIOWrapper reads it in blocks)."""

    def __init__(self, handle):
        self.handle = handle

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.handle.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def open_rows(handle, delimiter: str) -> Iterator[list[str]]:
    """The file's rows (header first) as lists of cells, read in blocks (utf-8-sig drops a BOM)."""
    text = io.TextIOWrapper(io.BufferedReader(_Lines(handle), 64 * 1024), encoding="utf-8-sig", newline="")
    return csv.reader(text, delimiter=delimiter, strict=False)


def _check_utf8(upload) -> bytes:
    """The first 64 KiB (for sniffing), after checking the whole file decodes as UTF-8 and holds no NUL byte."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    head = b""
    upload.seek(0)
    for chunk in upload.chunks(256 * 1024):
        if not head:
            head = chunk[: 64 * 1024]
        if b"\x00" in chunk:
            raise ImportFileInvalid("is not a text (CSV) file: it contains NUL bytes")
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError:
            raise ImportFileInvalid("is not UTF-8 text; save the CSV as UTF-8 and upload it again") from None
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise ImportFileInvalid("is not UTF-8 text; save the CSV as UTF-8 and upload it again") from None
    return head


def _delimiter(head: bytes) -> str:
    sample = head.decode("utf-8", errors="ignore").lstrip("\ufeff")
    first_line = sample.splitlines()[0] if sample else ""
    counts = {d: first_line.count(d) for d in (",", ";", "\t", "|")}
    best = max(counts, key=counts.get)
    return best if counts[best] else ","


def inspect(upload, file_format: str) -> dict:
    """Check an uploaded file; answer its delimiter, columns, row count and preview rows, or raise."""
    if upload.size == 0:
        raise ImportFileInvalid("is empty")
    if upload.size > MAX_IMPORT_BYTES:
        raise ImportFileTooLarge(MAX_IMPORT_BYTES)
    delimiter = _delimiter(_check_utf8(upload))
    upload.seek(0)
    rows = open_rows(upload, delimiter)
    try:
        header = next(rows, None)
        columns = [cell.strip() for cell in header or []]
        if not columns or not any(columns):
            raise ImportFileInvalid("has no header row")
        _check_header(columns)
        if file_format == ImportFormat.DENTALLY:
            missing = [name for name in DENTALLY_REQUIRED if name not in columns]
            if missing:
                raise ImportFileInvalid(f"is not a Dentally patient export: no {', '.join(missing)} column")
        preview, count = [], 0
        for row in rows:
            if not any(cell.strip() for cell in row):
                continue  # blank lines are not rows
            count += 1
            if count <= PREVIEW_ROWS:
                preview.append(row)
            if count > MAX_IMPORT_ROWS:
                raise ImportFileInvalid(f"has more than {MAX_IMPORT_ROWS} rows; split it")
    except csv.Error as error:
        raise ImportFileInvalid(f"is not a readable CSV file ({error})") from None
    if count == 0:
        raise ImportFileInvalid("has a header but no rows")
    return {"delimiter": delimiter, "columns": columns, "rows": count, "preview": preview}


def _check_header(columns: list[str]) -> None:
    if len(columns) > MAX_COLUMNS:
        raise ImportFileInvalid(f"has more than {MAX_COLUMNS} columns")
    if any(not column for column in columns):
        raise ImportFileInvalid("has a column without a name in its header row")
    if any(len(column) > MAX_HEADER_LENGTH for column in columns):
        raise ImportFileInvalid(f"has a column name longer than {MAX_HEADER_LENGTH} characters")
    seen = set()
    for column in columns:
        if column in seen:
            raise ImportFileInvalid(f"names the column {column!r} twice")
        seen.add(column)


def data_rows(storage_name_: str, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(spreadsheet row number, cells) of each data row of a stored file: the header is row 1; blank rows are
    skipped (not data rows) but keep their number, as a spreadsheet shows them."""
    with media_storage().open(storage_name_, "rb") as handle:
        rows = open_rows(handle, delimiter)
        next(rows, None)
        for number, row in enumerate(rows, start=2):
            if not any(cell.strip() for cell in row):
                continue
            yield number, row
