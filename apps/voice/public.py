"""AI Voice's interface to other apps: import from here, never from its other modules or its api/.

What other areas use (GET /bootstrap): whether the practice has switched AI Voice on.
"""

from django.db.models import Exists

from apps.voice.models import VoiceSettings


def ai_voice_enabled(organization) -> Exists:
    """As an expression: the practice's AI Voice settings are switched on (off until a practice enables them)."""
    return Exists(VoiceSettings.objects.for_org(organization).filter(enabled=True))


__all__ = ["ai_voice_enabled"]
