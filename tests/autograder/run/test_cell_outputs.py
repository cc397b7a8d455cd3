"""What the grader keeps of one cell's outputs (`autograder.run.cell_outputs`): every message is the
student kernel's, so each cap is proven here with the exact outcome, in memory (no kernel)."""

from __future__ import annotations

import pytest

from autograder.limits import MAX_OUTPUT_CHARS, MAX_OUTPUTS
from autograder.run.cell_outputs import DROPPED, CellOutputs


def message(kind: str, content: dict) -> dict:
    """An IOPub message as jupyter_client hands it over (the type at the top and in the header)."""
    return {"msg_type": kind, "header": {"msg_type": kind}, "content": content}


def stream(text: str, name: str = "stdout") -> dict:
    return message("stream", {"name": name, "text": text})


def display(text: str) -> dict:
    return message("display_data", {"data": {"text/plain": text}, "metadata": {}})


def clear(wait: bool = False) -> dict:
    return message("clear_output", {"wait": wait})


def texts(outputs: CellOutputs) -> list[str]:
    return [o.get("text") or o["data"]["text/plain"] for o in outputs.items]


def test_a_streams_pieces_are_merged_and_other_outputs_kept_in_order():
    outputs = CellOutputs()
    for msg in (stream("a"), stream("b"), stream("!", "stderr"), display("fig"), stream("c")):
        outputs.add(msg)
    assert texts(outputs) == ["ab", "!", "fig", "c"]
    assert not outputs.truncated


def test_messages_that_are_no_output_are_not_kept():
    outputs = CellOutputs()
    outputs.add(message("status", {"execution_state": "busy"}))
    outputs.add(message("execute_input", {"code": "x", "execution_count": 1}))
    assert outputs.items == [] and outputs.chars == 0


def test_a_malformed_output_message_is_dropped_and_the_next_one_kept():
    outputs = CellOutputs()
    outputs.add(message("display_data", {"metadata": {}}))  # no data
    outputs.add(stream("after"))
    assert texts(outputs) == ["after"]


def test_past_the_character_cap_one_line_says_so_and_nothing_more_is_kept():
    outputs = CellOutputs(max_chars=1_000)
    outputs.add(stream("x" * 500))
    outputs.add(stream("y" * 600))  # over the cap: dropped, with the notice
    outputs.add(stream("z"))  # even a small one afterwards
    assert texts(outputs) == ["x" * 500, DROPPED]
    assert outputs.truncated and outputs.chars <= 1_000


def test_past_the_output_count_cap_one_line_says_so():
    outputs = CellOutputs()
    for i in range(MAX_OUTPUTS + 50):
        outputs.add(display(str(i)))
    assert len(outputs.items) == MAX_OUTPUTS + 1 and texts(outputs)[-1] == DROPPED
    assert texts(outputs)[:2] == ["0", "1"] and outputs.truncated


def test_clearing_outputs_does_not_give_back_room_under_the_cap():
    """A flood of print + clear_output is bounded like any other flood: what was cleared still counts. A
    clear after the cap clears the notice too, as Jupyter's does; `truncated` stays set (the executor says
    so in the cell's reason)."""
    size = len(repr(stream("x" * 100)["content"]))  # what one message counts for
    outputs = CellOutputs(max_chars=10 * size)
    for _ in range(9):
        outputs.add(stream("x" * 100))
        outputs.add(clear())
    assert not outputs.truncated and outputs.items == []
    outputs.add(stream("y" * 100))  # the cap reached, not passed: kept
    outputs.add(stream("z" * 100))  # past the cap
    assert texts(outputs) == ["y" * 100, DROPPED] and outputs.truncated
    outputs.add(clear())
    outputs.add(stream("after"))
    assert outputs.items == [] and outputs.truncated and outputs.chars == 10 * size


def test_clear_output_with_wait_clears_when_the_next_output_comes():
    outputs = CellOutputs()
    outputs.add(stream("old"))
    outputs.add(clear(wait=True))
    assert texts(outputs) == ["old"]
    outputs.add(stream("new"))
    assert texts(outputs) == ["new"]


@pytest.mark.parametrize(("asked", "kept"), [(10 * MAX_OUTPUT_CHARS, MAX_OUTPUT_CHARS), (-5, 0), (7, 7)])
def test_the_callers_cap_never_exceeds_the_grader_s_and_is_never_negative(asked, kept):
    assert CellOutputs(max_chars=asked).max_chars == kept
