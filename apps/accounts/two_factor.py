"""Moved to apps.accounts.services.two_factor; this path stays importable, as the same module (patching works)."""

import sys

from apps.accounts.services import two_factor

sys.modules[__name__] = two_factor
