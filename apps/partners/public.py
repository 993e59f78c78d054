"""The partners app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use (the MCP server): the credential an agency connection acts with inside a linked practice.
"""

from apps.partners.selectors import practice_credential

__all__ = ["practice_credential"]
