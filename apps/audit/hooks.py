"""Recording the writes that do not come through the API: the Django admin and our own management commands.

Both are installed once, in AuditConfig.ready(), and only record (no business rule runs here).

Admin: ModelAdmin.log_addition / log_change / log_deletions — the hooks the admin calls for every add, change and
delete, inside the same transaction as the write — are wrapped: Django's LogEntry is still written as before, and an
audit entry (source=admin) is added next to it with the person, the object's type and id, its practice (when the
object has one), the changed field names (the change message's labels mapped back to model field names) and the
address block. A bulk delete action records one entry per object.

Commands: BaseCommand.execute is wrapped for commands whose module is under `apps.` (never Django's or a library's:
migrate, flush and the test runner's own commands are left alone). While one runs, post_save and post_delete
receivers count the rows it saves and deletes per model (connected only for the run, so Django's fast deletes stay
fast everywhere else). When it wrote anything, one entry (source=command) records the command's name, the names of the
options given (not their values), the models written with counts, the exit status (0 done, 1 raised) and the practice
when the rows that name one all name the same. Writes that send no model signals (bulk_create, update(), raw SQL)
are not counted; a command that only writes that way records nothing (docs/audit.md).
"""

import json
import logging
import threading
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import signals

from apps.audit import recording
from apps.audit.models import AuditEntry
from apps.audit.public import record

logger = logging.getLogger("apps.audit")

ORGANIZATION_LABEL = "accounts.Organization"


def _organization_of(obj):
    if obj._meta.label == ORGANIZATION_LABEL:
        return obj.pk
    return getattr(obj, "organization_id", None)


def _subject_type(obj) -> str:
    return str(obj._meta.verbose_name).replace(" ", "_")[:64]


# --- the admin ----------------------------------------------------------------------------------------------------


def changed_field_names(model, message) -> list[str]:
    """The model field names in an admin change message (a list, or its JSON text). The admin stores the form's
    labels ("Interval months"); each is mapped back to its field's name, and an unknown label is kept as it is.
    Inline changes name the inline's model and its fields ("recall reminder.outcome"); object texts are left out."""
    if isinstance(message, str):
        try:
            message = json.loads(message) if message else []
        except ValueError:
            return []
    by_label = {}
    for model_field in model._meta.get_fields():
        name = getattr(model_field, "name", None)
        label = getattr(model_field, "verbose_name", None)
        if name:
            by_label[name] = name
            if label:
                by_label[str(label)] = name
                by_label[str(label)[:1].upper() + str(label)[1:]] = name
    names = []
    for part in message if isinstance(message, list) else []:
        changed = part.get("changed") if isinstance(part, dict) else None
        if not isinstance(changed, dict):
            continue
        labels = [str(label) for label in changed.get("fields", [])]
        if "object" in changed:  # an inline object's change
            names += [f"{changed.get('name', '')}.{label}" for label in labels]
        else:
            names += [by_label.get(label, label) for label in labels]
    return names


def record_admin(request, objects, *, action: str, message=None) -> int:
    """One entry per object the admin wrote; never raises (a failure is logged and the admin's write stands)."""
    recorded = 0
    route = recording.route_pattern(request.resolver_match.route) if request.resolver_match else request.path_info
    for obj in objects:
        try:
            with transaction.atomic():
                record(
                    source=AuditEntry.Source.ADMIN,
                    action=action,
                    organization_id=_organization_of(obj),
                    user_id=getattr(request.user, "pk", None),
                    credential_kind="session",
                    method=request.method,
                    route=route,
                    subject_type=_subject_type(obj),
                    subject_id=str(obj.pk),
                    fields=changed_field_names(type(obj), message) if action == "update" else (),
                    address=request.META.get("REMOTE_ADDR"),
                )
            recorded += 1
        except Exception as exc:
            logger.error("audit entry not recorded for an admin %s: %s", action, type(exc).__name__)
    return recorded


def install_admin_hooks() -> None:
    from django.contrib.admin import ModelAdmin

    if getattr(ModelAdmin, "_audit_hooks", False):
        return
    log_addition, log_change, log_deletions = ModelAdmin.log_addition, ModelAdmin.log_change, ModelAdmin.log_deletions

    def audited_log_addition(self, request, obj, message):
        logged = log_addition(self, request, obj, message)
        record_admin(request, [obj], action="create")
        return logged

    def audited_log_change(self, request, obj, message):
        logged = log_change(self, request, obj, message)
        record_admin(request, [obj], action="update", message=message)
        return logged

    def audited_log_deletions(self, request, queryset):
        objects = list(queryset)  # called before the rows go
        logged = log_deletions(self, request, objects)
        record_admin(request, objects, action="delete")
        return logged

    ModelAdmin.log_addition = audited_log_addition
    ModelAdmin.log_change = audited_log_change
    ModelAdmin.log_deletions = audited_log_deletions
    ModelAdmin._audit_hooks = True


# --- management commands ------------------------------------------------------------------------------------------

# Options every command has (Django's own): never interesting, never recorded.
BASE_OPTIONS = frozenset(
    {"verbosity", "settings", "pythonpath", "traceback", "no_color", "force_color", "skip_checks", "help"}
)


@dataclass
class CommandWrites:
    counts: Counter = field(default_factory=Counter)
    organizations: set = field(default_factory=set)


_current: ContextVar[CommandWrites | None] = ContextVar("audit_command_writes", default=None)
_receivers_lock = threading.Lock()
_receivers_users = 0
_RECEIVER_UID = "apps.audit.command_writes"


def _count_write(sender, instance, **kwargs) -> None:
    writes = _current.get()
    if writes is None or sender is AuditEntry:
        return
    writes.counts[sender._meta.label_lower] += 1
    organization_id = _organization_of(instance)
    if organization_id is not None:
        writes.organizations.add(organization_id)


def _connect() -> None:
    global _receivers_users
    with _receivers_lock:
        if _receivers_users == 0:
            signals.post_save.connect(_count_write, weak=False, dispatch_uid=_RECEIVER_UID)
            signals.post_delete.connect(_count_write, weak=False, dispatch_uid=_RECEIVER_UID)
        _receivers_users += 1


def _disconnect() -> None:
    global _receivers_users
    with _receivers_lock:
        _receivers_users -= 1
        if _receivers_users == 0:
            signals.post_save.disconnect(dispatch_uid=_RECEIVER_UID)
            signals.post_delete.disconnect(dispatch_uid=_RECEIVER_UID)


def option_names(command, name: str, options: dict) -> list[str]:
    """The options given a value other than their default (names only: a password or a name is never recorded)."""
    try:
        parser = command.create_parser("manage.py", name)
        defaults = {action.dest: action.default for action in parser._actions}
    except Exception:  # a command whose parser cannot be built again: name nothing rather than guess
        return []
    return sorted(
        dest
        for dest, value in options.items()
        if dest not in BASE_OPTIONS and dest in defaults and value != defaults[dest] and value is not None
    )


def record_command(*, name: str, options: list[str], writes: CommandWrites, failed: bool) -> None:
    # The practice when every row that has one names the same one (people and platform rows name none).
    organization_id = next(iter(writes.organizations)) if len(writes.organizations) == 1 else None
    try:
        record(
            source=AuditEntry.Source.COMMAND,
            action="run",
            organization_id=organization_id,
            route=name,
            subject_type="command",
            subject_id=name,
            fields=options,
            status_code=1 if failed else 0,
            written=dict(writes.counts),
        )
    except Exception as exc:
        logger.error("audit entry not recorded for command %s: %s", name, type(exc).__name__)


def install_command_hook() -> None:
    from django.core.management.base import BaseCommand

    if getattr(BaseCommand, "_audit_hooks", False):
        return
    execute = BaseCommand.execute

    def audited_execute(self, *args, **options):
        module = type(self).__module__
        if not module.startswith("apps.") or _current.get() is not None:
            return execute(self, *args, **options)  # not ours, or a command called by one being recorded
        name = module.rsplit(".", 1)[-1]
        writes = CommandWrites()
        token = _current.set(writes)
        _connect()
        failed = True
        try:
            result = execute(self, *args, **options)
            failed = False
            return result
        finally:
            _disconnect()
            _current.reset(token)
            if writes.counts:
                record_command(name=name, options=option_names(self, name, options), writes=writes, failed=failed)

    BaseCommand.execute = audited_execute
    BaseCommand._audit_hooks = True
