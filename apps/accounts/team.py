"""Moved to apps.accounts.services.team; this path stays importable, as the same module object (patching works)."""

import sys

from apps.accounts.services import team

sys.modules[__name__] = team
