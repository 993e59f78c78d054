"""Moved to apps.accounts.services.profile; this path stays importable, as the same module object (patching works)."""

import sys

from apps.accounts.services import profile

sys.modules[__name__] = profile
