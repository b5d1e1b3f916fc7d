"""What people read: context assembly for the model, the rule checks on drafts, help-center search,
and the findings a reply states.

Internal: the public API is ``supportbot`` itself (see docs/architecture.md)."""
