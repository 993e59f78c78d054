"""Moved to apps.accounts.services.sessions; this path stays importable, as the same module object (patching works)."""

import sys

from apps.accounts.services import sessions

sys.modules[__name__] = sessions
