"""The audit log: who changed what, when and from where, through the API, the admin and management commands. Append-
only; read by owners and managers.
"""
