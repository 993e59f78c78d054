"""Small write helpers the apps' services share: no business rules, no app imports."""

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import IntegrityError, transaction

from apps.core.naming import to_camel


def assign_fields(
    instance,
    data: Mapping[str, Any],
    *,
    fields: Iterable[str] | None = None,
    relations: Mapping[str, str] | None = None,
    blank_when_none: Iterable[str] = (),
) -> list[str]:
    """Set the given fields on `instance`; return the camelCase wire names of those whose value changed.

    `fields` limits and orders the keys taken from `data` (all of them, in their order, when None). `relations` maps
    a key to the foreign-key attribute it sets (the value is a model instance or None): the change is judged on the
    stored id and named `<attribute>Id`. Keys in `blank_when_none` store "" for None (text columns without NULL)."""
    relations = relations or {}
    changed = []
    for key in data if fields is None else fields:
        if key not in data:
            continue
        value = data[key]
        if value is None and key in blank_when_none:
            value = ""
        if key in relations:
            attribute = relations[key]
            current, new = getattr(instance, f"{attribute}_id"), (value.pk if value is not None else None)
            name = to_camel(f"{attribute}_id")
        else:
            attribute, current, new, name = key, getattr(instance, key), value, to_camel(key)
        if current != new:
            changed.append(name)
        setattr(instance, attribute, value)
    return changed


def save_unique(instance, error_class):
    """Save `instance` in a savepoint; a unique-constraint clash raises `error_class()` instead of IntegrityError."""
    try:
        with transaction.atomic():
            instance.save()
    except IntegrityError:
        raise error_class() from None
    return instance
