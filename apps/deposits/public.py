"""The deposits app's interface to other apps: import from here, never from its other modules or its api/.

Nothing is used by other areas yet: the app answers the patients area's `embed=deposits` through the registry it fills
in DepositsConfig.ready(). The model and renderer are offered for the areas that will show deposits."""

from apps.deposits.models import DepositRequest, DepositStatus
from apps.deposits.renderers import DepositRequestSerializer

__all__ = ["DepositRequest", "DepositRequestSerializer", "DepositStatus"]
