"""The campaigns app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: the reports area reads campaign figures (`campaigns_launched`, `recipient_outcomes`);
automations send a template to one patient (`template_send`, refusing with `MessageNotQueued`,
`TemplateVariableMissing` or `TemplateNotApproved`) and check `MessageTemplate` ids.
"""

from apps.campaigns.errors import MessageNotQueued, TemplateNotApproved, TemplateVariableMissing
from apps.campaigns.models import MessageTemplate
from apps.campaigns.reporting import campaigns_launched, recipient_outcomes
from apps.campaigns.services import template_send

__all__ = [
    "MessageNotQueued",
    "MessageTemplate",
    "TemplateNotApproved",
    "TemplateVariableMissing",
    "campaigns_launched",
    "recipient_outcomes",
    "template_send",
]
