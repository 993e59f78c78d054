"""The reputation app's interface to other apps: import from here, never from its other modules or its api/.

Nothing is used by other areas yet: reputation reaches patients (erasure and merge hooks), appointments (the
appointment a request follows) and conversations (queue_messages) through their public modules.
"""

__all__: list[str] = []
