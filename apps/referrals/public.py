"""The referrals app's interface to other apps: import from here, never from its other modules or its api/.

Nothing is used by other areas yet: referrals fill in GET /patients/{id}?embed=referral through the patients
area's embed registry and read journey events through apps.events.
"""

__all__: list[str] = []
