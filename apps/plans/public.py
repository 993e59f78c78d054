"""The treatment plans app's interface to other apps: import from here, never from its other modules or its api/.

- `PlanItem`, `ItemStatus`, `TreatmentPlan`, `PlanStatus`: what issue 25 (the ledger) charges: a completed item's
  `fee` (integer minor units of its plan's `currency`, fixed when the item was added) x `quantity`.
- `plan_totals(organization=, plan_ids=)`: plan id → {"totals": {total, completed, remaining, itemCount}, "phases":
  [...]}, summed by the database from the items.
- `fee_for(organization=, patient_id=, procedure=)`: (unit fee, currency, source) a procedure would be charged to a
  patient now (the patient's default price list, else the procedure's default fee).

The patient record's `treatmentPlans` and `chartingSummary` sections are registered with apps.clinical in
PlansConfig.ready(); erasure and merge reach the plans through apps.patients' hooks.
"""

from apps.plans.models import ItemStatus, PlanItem, PlanStatus, TreatmentPlan
from apps.plans.rules import practice_currency
from apps.plans.selectors import fee_for, plan_totals

__all__ = ["ItemStatus", "PlanItem", "PlanStatus", "TreatmentPlan", "fee_for", "plan_totals", "practice_currency"]
