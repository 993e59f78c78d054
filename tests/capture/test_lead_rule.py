"""The one rule for whether a capture can become a lead (apps.capture.fields), shared by the processor and the
hosted form page: a usable e-mail or phone; a phone for an incoming call; each problem named by its field."""

import pytest

from apps.capture.fields import interpret


@pytest.mark.parametrize(
    ("fields", "phone_required", "problems"),
    [
        ({"email": "jane@example.com"}, False, {}),
        ({"phone": "+44 7700 900123"}, False, {}),
        ({"email": "jane@gmail", "phone": "+44 7700 900123"}, False, {}),
        ({"email": "jane@gmail"}, False, {"email": "Enter a complete e-mail address, like jane@example.com."}),
        (
            {"Your Email": "jane@gmail"},
            False,
            {"Your Email": "Enter a complete e-mail address, like jane@example.com."},
        ),
        ({"email": "x" * 250 + "@example.com"}, False, {"email": "An e-mail address can have at most 254 characters."}),
        ({"telephone": "12"}, False, {"telephone": "Enter a phone number with at least 5 digits."}),
        (
            {},
            False,
            {
                "email": "Enter an e-mail address or a phone number, so the practice can reply.",
                "phone": ("Enter an e-mail address or a phone number, so the practice can reply."),
            },
        ),
        ({"email": "jane@example.com"}, True, {"phone": "Enter a phone number."}),
        ({"email": "jane@gmail", "phone": "12"}, True, {"phone": "Enter a phone number with at least 5 digits."}),
    ],
)
def test_lead_problems(fields, phone_required, problems):
    mapping = {"Your Email": "email"}
    assert interpret(fields, mapping).lead_problems(phone_required=phone_required) == problems
