"""The rules of treatment plans that need no database: FDI teeth and their surfaces, the status moves, the
practice's currency, and the starter procedure catalogue."""

from apps.plans.models import Category, ItemStatus, PlanStatus

# --- teeth (FDI two-digit notation) ---------------------------------------------------------------------------------
# Permanent: quadrants 1-4, teeth 1-8 (11-48). Primary: quadrants 5-8, teeth 1-5 (51-85).
PERMANENT_TEETH = frozenset(q * 10 + t for q in range(1, 5) for t in range(1, 9))
PRIMARY_TEETH = frozenset(q * 10 + t for q in range(5, 9) for t in range(1, 6))
TEETH = PERMANENT_TEETH | PRIMARY_TEETH

# Surfaces in canonical order: mesial, occlusal, distal, buccal, lingual, incisal.
SURFACE_ORDER = "MODBLI"
# Incisors and canines (position 1-3) have an incisal edge and no occlusal surface; premolars and molars the reverse.
ANTERIOR_SURFACES = frozenset("MDBLI")
POSTERIOR_SURFACES = frozenset("MODBL")


def tooth_valid(tooth: int) -> bool:
    return tooth in TEETH


def surfaces_of_tooth(tooth: int) -> frozenset[str]:
    return ANTERIOR_SURFACES if tooth % 10 <= 3 else POSTERIOR_SURFACES


def surfaces_problem(tooth: int | None, surfaces: str) -> str | None:
    """Why these surfaces do not fit this tooth, or None."""
    if not surfaces:
        return None
    if tooth is None:
        return "surfaces need a tooth"
    invalid = sorted(set(surfaces) - surfaces_of_tooth(tooth), key=SURFACE_ORDER.index)
    if invalid:
        allowed = "".join(s for s in SURFACE_ORDER if s in surfaces_of_tooth(tooth))
        return f"{', '.join(invalid)} is not a surface of tooth {tooth} (its surfaces: {', '.join(allowed)})"
    return None


def canonical_surfaces(letters) -> str:
    return "".join(s for s in SURFACE_ORDER if s in set(letters))


def item_problems(*, procedure, tooth: int | None, surfaces: str) -> dict[str, str]:
    """Field → problem for an item of this procedure on this tooth with these surfaces (camelCase field names)."""
    problems = {}
    if tooth is None and procedure.tooth_required:
        problems["tooth"] = f"procedure {procedure.code} needs a tooth"
    if not surfaces and procedure.surfaces_required:
        problems["surfaces"] = f"procedure {procedure.code} needs surfaces"
    problem = surfaces_problem(tooth, surfaces)
    if problem and "tooth" not in problems:
        problems["surfaces"] = problem
    return problems


# --- statuses ---------------------------------------------------------------------------------------------------------
# Moves a person asks for. `completed` is never asked for: the plan completes when its last planned item is completed
# or cancelled (with at least one completed), and an accepted plan goes in_progress when its first item is completed.
PLAN_MOVES: dict[str, tuple[str, ...]] = {
    PlanStatus.PROPOSED: (PlanStatus.ACCEPTED, PlanStatus.DECLINED, PlanStatus.CANCELLED),
    PlanStatus.ACCEPTED: (PlanStatus.IN_PROGRESS, PlanStatus.CANCELLED),
    PlanStatus.IN_PROGRESS: (PlanStatus.CANCELLED,),
    PlanStatus.COMPLETED: (),
    PlanStatus.DECLINED: (PlanStatus.PROPOSED,),
    PlanStatus.CANCELLED: (),
}
# Items can be added, changed and removed while the plan is open.
OPEN_PLAN_STATUSES = (PlanStatus.PROPOSED, PlanStatus.ACCEPTED, PlanStatus.IN_PROGRESS)
# Items are done only on a plan the patient accepted.
WORKING_PLAN_STATUSES = (PlanStatus.ACCEPTED, PlanStatus.IN_PROGRESS)
ITEM_MOVES: dict[str, tuple[str, ...]] = {
    ItemStatus.PLANNED: (ItemStatus.COMPLETED, ItemStatus.CANCELLED),
    ItemStatus.COMPLETED: (),
    ItemStatus.CANCELLED: (),
}

# --- limits -----------------------------------------------------------------------------------------------------------
MAX_ITEMS_PER_PLAN = 200
MAX_TEMPLATE_ITEMS = 50
MAX_PHASE = 20
MAX_QUANTITY = 99
MAX_FEE = 100_000_000  # minor units: a million in a two-decimal currency
MAX_TEXT = 10_000

# --- the practice's currency -------------------------------------------------------------------------------------
_EURO_AREA = frozenset(
    "AT BE BG CY DE EE ES FI FR GR HR IE IT LT LU LV MT NL PT SI SK AD MC SM VA ME XK".split()  # noqa: SIM905
)
_CURRENCY_OF_COUNTRY = {
    "GB": "GBP",
    "US": "USD",
    "CA": "CAD",
    "AU": "AUD",
    "NZ": "NZD",
    "CH": "CHF",
    "LI": "CHF",
    "SE": "SEK",
    "NO": "NOK",
    "DK": "DKK",
    "IS": "ISK",
    "PL": "PLN",
    "CZ": "CZK",
    "HU": "HUF",
    "RO": "RON",
}


def practice_currency(organization) -> str:
    """The ISO 4217 currency of the practice's country (EUR in the euro area and when the country is unknown)."""
    country = (getattr(organization, "country", "") or "").upper()
    if country in _EURO_AREA:
        return "EUR"
    return _CURRENCY_OF_COUNTRY.get(country, "EUR")


# --- the starter catalogue ---------------------------------------------------------------------------------------
# (code, name, category, default fee in minor units, tooth required, surfaces required)
STARTER_PROCEDURES: tuple[tuple[str, str, str, int, bool, bool], ...] = (
    ("EXAM", "Examination", Category.DIAGNOSTIC, 5000, False, False),
    ("EXAM-NEW", "New patient examination", Category.DIAGNOSTIC, 7500, False, False),
    ("XR-BW", "Bitewing radiographs", Category.DIAGNOSTIC, 3000, False, False),
    ("XR-PA", "Periapical radiograph", Category.DIAGNOSTIC, 2000, True, False),
    ("XR-OPG", "Panoramic radiograph", Category.DIAGNOSTIC, 6000, False, False),
    ("SCALE", "Scale and polish", Category.PREVENTIVE, 6500, False, False),
    ("FS", "Fissure sealant", Category.PREVENTIVE, 3500, True, False),
    ("FL", "Fluoride varnish", Category.PREVENTIVE, 2500, False, False),
    ("FILL-AM", "Amalgam filling", Category.RESTORATIVE, 9000, True, True),
    ("FILL-CO", "Composite filling", Category.RESTORATIVE, 12000, True, True),
    ("FILL-GI", "Glass ionomer filling", Category.RESTORATIVE, 8000, True, True),
    ("INLAY", "Inlay or onlay", Category.RESTORATIVE, 45000, True, True),
    ("RCT-A", "Root canal treatment, anterior", Category.ENDODONTIC, 35000, True, False),
    ("RCT-P", "Root canal treatment, premolar", Category.ENDODONTIC, 45000, True, False),
    ("RCT-M", "Root canal treatment, molar", Category.ENDODONTIC, 60000, True, False),
    ("PERIO-RSD", "Root surface debridement, per quadrant", Category.PERIODONTAL, 15000, False, False),
    ("CROWN", "Crown", Category.PROSTHODONTIC, 65000, True, False),
    ("VENEER", "Veneer", Category.PROSTHODONTIC, 55000, True, False),
    ("BRIDGE", "Bridge unit", Category.PROSTHODONTIC, 60000, True, False),
    ("DENT-P", "Partial denture", Category.PROSTHODONTIC, 70000, False, False),
    ("DENT-F", "Full denture", Category.PROSTHODONTIC, 120000, False, False),
    ("EXT", "Extraction", Category.SURGICAL, 12000, True, False),
    ("EXT-S", "Surgical extraction", Category.SURGICAL, 25000, True, False),
    ("IMP", "Implant placement", Category.IMPLANT, 180000, True, False),
    ("IMP-AB", "Implant abutment", Category.IMPLANT, 40000, True, False),
    ("IMP-CR", "Implant crown", Category.IMPLANT, 90000, True, False),
    ("WHITEN", "Tooth whitening", Category.OTHER, 30000, False, False),
    ("ORTHO-CA", "Clear aligner treatment", Category.ORTHODONTIC, 350000, False, False),
)
