"""The record of one step, without a database: what the state becomes, what is written, and when
the write must commit at once."""

from datetime import UTC, datetime
from decimal import Decimal

from supportbot import RefundRequest, SupportState, Turn
from supportbot._state import Review, StateUpdate, Ticket
from supportbot.run._graph import START
from supportbot.run._record import CHECKPOINT_AFTER, ROUTED_BY_STATE, record_step
from supportbot.store._rows import Loaded

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def _loaded(**fields: object) -> Loaded:
    state = SupportState(ticket=Ticket("T1", "a@example.com", "s", "b", NOW), **fields)  # type: ignore[arg-type]
    return Loaded(state=state, seq=4, next_step="draft", status="in_progress")


def test_a_step_that_adds_nothing_for_the_customer_need_not_commit_and_keeps_its_update() -> None:
    after, write, must_commit = record_step(_loaded(), "draft", {"draft": "您好"}, "check", max_revisions=2)
    assert after.state.draft == "您好" and after.seq == 5 and after.next_step == "check"
    assert write.row.seq == 5 and write.row.step == "draft" and write.row.update == {"draft": "您好"}
    assert write.checkpoint is None and write.status is None  # still in progress: no status to write
    assert not write.turns and not must_commit


def test_a_reply_or_the_rounds_end_commits_at_once_and_carries_only_the_new_turns() -> None:
    stored = Turn("customer", "在吗", idx=0)
    reply: StateUpdate = {"turns": [Turn("agent", "在的")], "outcome": "resolved"}
    after, write, must_commit = record_step(
        _loaded(turns=(stored,)), "finalize", reply, None, max_revisions=2
    )
    assert [t.content for t in write.turns] == ["在的"] and write.turns[0].idx == 1
    assert write.row.turn_count == 2 and after.status == "resolved" and write.status == "resolved"
    assert must_commit


def test_a_round_start_resets_the_round_and_writes_the_customer_messages_past_those_stored() -> None:
    loaded = _loaded(round=1, draft="上一轮的草稿", turns=(Turn("customer", "一", idx=0),))
    update: StateUpdate = {"round": 2, "handled_upto": 2, "turns": [Turn("customer", "二")]}
    after, write, must_commit = record_step(
        loaded, START, update, "load_customer", max_revisions=2, stored_turns=2
    )
    assert after.state.draft == ""  # per-round fields start over, without being stored
    assert "draft" not in write.row.update
    assert not write.turns and not must_commit  # the message was stored before the round began


def test_the_checkpoint_step_stores_the_whole_state_instead_of_its_update() -> None:
    _, write, _ = record_step(
        _loaded(), CHECKPOINT_AFTER, {"summary": "客户报 E3001"}, "classify", max_revisions=2
    )
    assert write.checkpoint is not None and write.checkpoint["summary"] == "客户报 E3001"
    assert write.row.update == {}
    _, plain, _ = record_step(_loaded(), "classify", {"summary": "客户报 E3001"}, "retrieve", max_revisions=2)
    assert plain.checkpoint is None and plain.row.update == {"summary": "客户报 E3001"}


def test_a_route_read_off_the_state_can_pause_for_approval_and_then_the_record_says_so() -> None:
    refund = RefundRequest("R1", "INV-1", Decimal("200.00"), "CNY", "年付退款")
    loaded = _loaded(refund_request=refund)
    after, write, must_commit = record_step(
        loaded, "check", {"review": Review(passed=True)}, ROUTED_BY_STATE, max_revisions=2
    )
    assert after.next_step == "approval" and after.state.outcome == "waiting_approval"
    assert write.status == "waiting_approval" and write.row.update["outcome"] == "waiting_approval"
    assert write.approval is not None and write.approval["refund_request"]["id"] == "R1"
    assert must_commit
    redraft, _, _ = record_step(
        _loaded(), "check", {"review": Review(passed=False)}, ROUTED_BY_STATE, max_revisions=2
    )
    assert redraft.next_step == "draft"  # a failed review redrafts while revisions remain


def test_a_person_on_the_ticket_sets_its_status_whatever_the_step() -> None:
    after, write, _ = record_step(_loaded(), "draft", {"human_agent": "王"}, "check", max_revisions=2)
    assert after.status == "with_human" and write.status == "with_human"
