"""The deposits app's interface to other apps: import from here, never from its other modules or its api/.

The reports area reads deposit figures (`deposit_outcomes`). The app answers the patients area's
`embed=deposits` through the registry it fills in DepositsConfig.ready(). The model and renderer are offered
for the areas that will show deposits."""

from apps.deposits.models import DepositRequest, DepositStatus
from apps.deposits.renderers import DepositRequestSerializer
from apps.deposits.reporting import deposit_outcomes
from apps.deposits.tasks import RECEIPT_RETENTION_DAYS  # apps.audit: GET /compliance/retention

__all__ = [
    "RECEIPT_RETENTION_DAYS",
    "DepositRequest",
    "DepositRequestSerializer",
    "DepositStatus",
    "deposit_outcomes",
]
