"""The fields the hosted form page shows (and the site configuration lists), in the capture's default names."""

FORM_PAGE_FIELDS: tuple[dict, ...] = (
    {"name": "first_name", "type": "text", "label": "First name", "required": True, "autocomplete": "given-name"},
    {"name": "last_name", "type": "text", "label": "Last name", "required": False, "autocomplete": "family-name"},
    # An e-mail or a phone (either will do, phone-only leads are welcome): checked by the capture processor's rule.
    {"name": "email", "type": "email", "label": "Email", "required": False, "autocomplete": "email"},
    {"name": "phone", "type": "tel", "label": "Phone", "required": False, "autocomplete": "tel"},
    {"name": "message", "type": "textarea", "label": "Message", "required": False, "autocomplete": "off"},
    {
        "name": "marketing_consent",
        "type": "checkbox",
        "label": "I would like to receive news and offers by email and text message. I can withdraw this at any time.",
        "required": False,
        "autocomplete": "off",
    },
)
MAX_LENGTHS = {"first_name": 200, "last_name": 200, "email": 254, "phone": 40, "message": 5000}


def config_fields() -> list[dict]:
    """The fields as GET /site/{siteKey}/config lists them."""
    return [{key: field[key] for key in ("name", "type", "label", "required")} for field in FORM_PAGE_FIELDS]
