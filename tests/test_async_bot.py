"""AsyncSupportBot: the asyncio front end, on the real database (its behaviour is the synchronous
bot's: the behaviour suites run against both through ``open_bot``, see conftest.py)."""

from __future__ import annotations

import asyncio

import psycopg
from fakes import AsyncModel, ScriptedLLM, seed_business

from supportbot import Settings
from supportbot._bot_async import AsyncSupportBot


def test_an_async_bot_opens_answers_and_remembers(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        seed_business(conn)

    async def main() -> None:
        settings = Settings(database_url=database_url)
        async with AsyncSupportBot.open(
            database_url, llm=AsyncModel(ScriptedLLM()), backend="demo", settings=settings
        ) as bot:
            opened = await bot.open_ticket("lina@example.com", body="E3001 同步失败")
            assert opened.outcome == "resolved"
            again = await bot.send(opened.ticket_id, "还是不行")
            assert again.round == 2 and again.reply
            state = await bot.state(opened.ticket_id)
            assert [t.role for t in state.turns] == ["customer", "agent", "customer", "agent"]
            assert len(await bot.history(opened.ticket_id)) > 10

    asyncio.run(main())
