"""`harness.messages`, as plug-ins written for earlier versions import it: `Message` lives in
`harness.base.messages` and is also exported by `harness.policy`."""

from harness.base.messages import Message, Origin, Role, total_chars

__all__ = ["Message", "Origin", "Role", "total_chars"]
