"""What other apps do when a person leaves a practice: filled in their AppConfig.ready() with
`on_member_removed(callback)`; member_remove calls each `callback(organization, user_id)` inside its transaction, so
their clean-up commits or rolls back with the removal (team chat forgets the rooms the person was in: coming back
later must not reopen what was said while they were away)."""

from collections.abc import Callable

_member_removed: list[Callable] = []


def on_member_removed(callback: Callable) -> None:
    if callback not in _member_removed:
        _member_removed.append(callback)


def member_removed(*, organization, user_id) -> None:
    for callback in _member_removed:
        callback(organization=organization, user_id=user_id)
