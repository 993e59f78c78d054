"""Bootstrap: one call with what a client needs at start (practice, role, workspaces, features, limits), with an
ETag.
"""
