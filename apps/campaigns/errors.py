from apps.core.errors import ApiError


class CampaignTransitionNotAllowed(ApiError):
    status_code = 409
    code = "CAMPAIGN_TRANSITION_NOT_ALLOWED"
    message = "The campaign's status does not allow this action."

    def __init__(self, *, action: str, status: str, allowed_from: list[str]):
        super().__init__(
            f"A {status} campaign cannot be {action}; only a campaign that is {' or '.join(allowed_from)} can.",
            details={"action": action, "status": status, "allowedFrom": allowed_from},
        )


class CampaignNotEditable(ApiError):
    status_code = 409
    code = "CAMPAIGN_NOT_EDITABLE"
    message = "Only a draft campaign can be changed or deleted."

    def __init__(self, status: str):
        super().__init__(
            f"Only a draft campaign can be changed or deleted; this one is {status}.", details={"status": status}
        )


class CampaignNotReady(ApiError):
    """Launching (or test-sending) needs a template and an audience that still exist, and a usable connection."""

    status_code = 409
    code = "CAMPAIGN_NOT_READY"
    message = "The campaign cannot be launched as it is."

    def __init__(self, problem: str, *, field: str):
        super().__init__(f"{field}: {problem}", details={"field": field, "problem": problem})


class TemplateNotApproved(ApiError):
    status_code = 409
    code = "TEMPLATE_NOT_APPROVED"
    message = "Only an approved messaging-app template can be sent."

    def __init__(self, approval_status: str):
        super().__init__(
            f"The messaging-app template is {approval_status}: only an approved one can be sent.",
            details={"approvalStatus": approval_status},
        )


class TemplateInUse(ApiError):
    status_code = 409
    code = "TEMPLATE_IN_USE"
    message = "A campaign not yet launched uses this template."

    def __init__(self, campaign_ids: list):
        super().__init__(
            "Campaigns not yet launched use this template: change their template or delete them first.",
            details={"campaignIds": [str(i) for i in campaign_ids]},
        )


class TemplateVariableMissing(ApiError):
    """A single send (to one patient) needs a value for every variable of the template."""

    status_code = 409
    code = "TEMPLATE_VARIABLE_MISSING"
    message = "The patient has no value for a variable of the template."

    def __init__(self, variable: str):
        super().__init__(
            f"The patient has no value for {{{{{variable}}}}} (e.g. no upcoming appointment).",
            details={"variable": variable},
        )


class MessageNotQueued(ApiError):
    """A single send the pipeline refused up front (no address, a blocked contact, no consent, …)."""

    status_code = 409
    code = "MESSAGE_NOT_SENT"
    message = "The message cannot be sent to this patient."

    def __init__(self, reason: str):
        super().__init__(f"The message cannot be sent to this patient ({reason}).", details={"reason": reason})


class TestSendAddressMissing(ApiError):
    status_code = 409
    code = "TEST_SEND_ADDRESS_MISSING"
    message = "Your account has no address on this channel."

    def __init__(self, channel: str, needed: str):
        super().__init__(
            f"A test send on {channel} goes to your own {needed}, and your account has none.",
            details={"channel": channel, "needed": needed},
        )


class TemplateCategoryLocked(ApiError):
    """Campaigns send marketing messages (with the opt-out link): a template a campaign still uses keeps its
    category."""

    status_code = 409
    code = "TEMPLATE_CATEGORY_LOCKED"
    message = "A campaign uses this template: its category cannot change."

    def __init__(self, campaign_ids: list):
        super().__init__(
            "Campaigns that are draft, scheduled, sending or paused use this template as their marketing template: "
            "its category cannot change while they do (choose another template for them, or cancel them first).",
            details={"campaignIds": [str(i) for i in campaign_ids]},
        )


class TestSendContactBlocked(ApiError):
    """The sender's own address is blocked on the channel: the pipeline's own reasons (CONTACT_BLOCKED: the number
    sent STOP; ADDRESS_SUPPRESSED: the e-mail address bounced or complained) as the code."""

    status_code = 409
    code = "CONTACT_BLOCKED"
    REASONS = {
        "CONTACT_BLOCKED": "Your own number or address asked not to be messaged on this channel (it sent STOP): "
        "nothing is sent to it, test sends included, until it is unblocked (texting START does that).",
        "ADDRESS_SUPPRESSED": "Your own e-mail address bounced or complained and is suppressed: test sends to it are "
        "not sent.",
    }

    def __init__(self, reason: str, *, channel: str):
        super().__init__(self.REASONS[reason], code=reason, details={"reason": reason, "channel": channel})


class TestSendAddressUnverified(ApiError):
    status_code = 409
    code = "TEST_SEND_ADDRESS_UNVERIFIED"
    message = "E-mail test sends go only to a verified account address."

    def __init__(self):
        super().__init__(
            "E-mail test sends go only to your account's e-mail address once it is verified: open the link of the "
            "verification e-mail first (POST /auth/send-verification-email sends it again).",
            details={"channel": "email", "needed": "verified e-mail address"},
        )
