"""The built-in context policies, registered through the `harness.policies` entry points.

Each module holds one policy; nothing here registers anything at import time.
"""
