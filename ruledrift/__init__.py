"""RuleDrift: test that an LLM agent keeps obeying its critical rules as a conversation grows."""

__version__ = "1.0.0"
