"""Moved to apps.accounts.services.media; this path stays importable, as the same module object (patching works)."""

import sys

from apps.accounts.services import media

sys.modules[__name__] = media
