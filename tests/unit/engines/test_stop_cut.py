"""``parsers.reference._stop_cut.StopCut``: where a replayed generation ends (an eos token, left out of the text, or
a kept stop string), across arbitrary chunk boundaries."""

from parsers.reference._stop_cut import StopCut


def feed_all(cut: StopCut, chunks: list[str]) -> str:
    return "".join(cut.feed(c) for c in chunks) + cut.flush()


def test_an_eos_marker_ends_the_text_and_the_rest_is_counted():
    cut = StopCut(("<|im_end|>",))
    assert feed_all(cut, ["Hi <|im", "_end|>ign", "ored"]) == "Hi "
    assert (cut.stopped, cut.ignored) == ("<|im_end|>", 7)


def test_a_held_tail_that_is_no_marker_is_released():
    cut = StopCut(("<|im_end|>",))
    assert cut.feed("a <|im") == "a "
    assert cut.feed("age") == "<|image"
    assert cut.flush() == "" and cut.stopped is None


def test_a_kept_stop_string_stays_in_the_text_and_an_eos_marker_wins_over_it():
    cut = StopCut(("<eos>",), ("</tool_call>",))
    assert feed_all(cut, ["<tool_call>x</tool", "_call>after"]) == "<tool_call>x</tool_call>"
    assert (cut.stopped, cut.ignored) == ("</tool_call>", 5)
    both = StopCut(("<eos>",), ("<eos>",))
    assert both.kept_markers == () and feed_all(both, ["a<eos>b"]) == "a"
