"""The round: the loop, the step graph, step records, the steps, refunds, takeovers and workers.

Internal: the public API is ``supportbot`` itself (see docs/architecture.md)."""
