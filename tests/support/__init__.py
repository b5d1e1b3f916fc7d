"""What the tests share: scripted models and fakes, the two bots seen as one, the browser and
console kits, the forms money is written in, the real servers the tests start (PgBouncer, Patroni,
a model server, an OpenAI-compatible stand-in) and a host's own business system.

The programs the tests start as processes (``worker.py``, ``work_process.py``,
``failover_process.py``, ``chat_server.py``, ``inbox_writer.py``) stay in ``tests/``: they are run,
not imported.
"""
