"""The today app's interface to other apps: import from here, never from its other modules or its api/.

push_to_users(organization_id, user_ids, kind, data): after the current transaction commits (at once outside one),
send the frame {"type": kind, "organizationId": ..., "data": data} to every /today/ws socket these members have
open on that practice (notifications, team chat). Nothing is sent on rollback; a failure to send is logged and never
fails the commit (clients re-read their feeds on reconnect).
"""

from apps.today.live import push_to_users

__all__ = ["push_to_users"]
