"""Writes to a person's own profile (name). The e-mail address is the login and is not changed here."""

from apps.accounts.models import User


def user_profile_update(*, user: User, name: str | None = None, phone_mobile: str | None = None) -> User:
    fields = []
    if name is not None:
        user.name = name.strip()
        fields.append("name")
    if phone_mobile is not None:
        user.phone_mobile = phone_mobile
        fields.append("phone_mobile")
    if fields:
        user.save(update_fields=[*fields, "updated_at"])
    return user
