"""Providers emulated offline: the wire protocols of the providers' own context management
(OpenAI's Responses API, Anthropic's Messages API), served on 127.0.0.1 by `harness emulate` and
usable in process, answering with the offline models (`reference`, `reference:lossy`) and
compacting with the reference summarizer (`harness.models.reference_summary`).

This wing sits below `policy`, so the built-in policies that delegate to a provider can run an
emulator in process, and above `models`, whose offline models it answers with.
"""
