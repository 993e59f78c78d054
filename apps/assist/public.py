"""The AI assist app's interface to other apps: import from here, never from its other modules or its api/.

For AI Voice (apps.voice: call summaries): the provider adapter (`configuration()` is None while the deployment has
no chat-completions provider; `complete(config, messages, max_tokens=…)` returns the answer's text or raises
AssistUnavailable, and logs no prompt or answer) and the practice's AI assist bucket (ASSIST_LIMIT: 60 burst, 6 per
minute per organization, failing closed), which AI Voice draws from too.
"""

from apps.assist.errors import AssistUnavailable
from apps.assist.limits import ASSIST_LIMIT
from apps.assist.provider import ProviderConfig, complete, configuration

__all__ = ["ASSIST_LIMIT", "AssistUnavailable", "ProviderConfig", "complete", "configuration"]
