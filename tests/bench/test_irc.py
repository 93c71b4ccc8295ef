"""bench.irc: each loan's precision on an annotated IRC log, and the log as bench.recall's files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bench.irc as irc

LOG = """\
[10:00] <ann> how do i mount a usb stick on ubuntu?
=== bob has joined #ubuntu
[10:00] <cat> anyone tried the new kernel
[10:01] <bob> ann: use the disks app or sudo mount /dev/sdb1 /mnt
[10:01] <bob> it should show up in nautilus too
[10:02] <ann> thanks
"""
# Line numbers count the system line: 0 ann asks, 2 cat, 3 bob answers ann, 4 bob goes on, 5 ann thanks bob.
LINKS = "0 0 -\n2 2 -\n0 3 -\n3 4 -\n4 5 -\n"


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> irc.Log:
    monkeypatch.setattr(irc, "ANNOTATED_FROM", 0)
    (tmp_path / "x.raw.txt").write_text(LOG, encoding="utf-8")
    (tmp_path / "x.annotation.txt").write_text(LINKS, encoding="utf-8")
    return irc.read_log(tmp_path / "x.raw.txt")


def test_a_log_is_read_without_its_system_lines_and_with_its_conversations(log: irc.Log) -> None:
    assert [line.index for line in log.lines] == [0, 2, 3, 4, 5]
    assert log.lines[0].asks and log.lines[1].asks and not log.lines[4].asks  # "anyone ..." asks too
    assert log.together(log.lines[0], log.lines[4]) and not log.together(log.lines[0], log.lines[1])


def test_the_guessed_answer_to_a_question_is_linked_only_where_the_annotators_linked_it(log: irc.Log) -> None:
    table = irc.measure_irc([log])
    # ann's question guesses cat's line (not linked); cat's question guesses bob's line, which answers ann.
    assert table["question | nearest other"]["linked"] == 0.0
    # bob names ann: a reply to ann's latest line, which the annotators linked.
    assert table["reply"] == {"pairs": 1, "linked": 1.0, "same_conversation": 1.0}
    # bob's burst: his two lines are linked; cat -> bob is not.
    assert table["neighbour | same author"]["linked"] == 1.0
    assert table["neighbour | other author, names no one"]["linked"] < 1.0


def test_an_export_writes_messages_replies_and_the_annotated_questions(log: irc.Log, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert irc.export([log], ["x"], out) == 5
    messages = [json.loads(line) for line in (out / "messages.jsonl").read_text().splitlines()]
    assert messages[2]["reply_to"] == "x/0" and "reply_to" not in messages[1]
    queries = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    assert queries == [{"channel": "x", "qid": "x/q0", "question": "how do i mount a usb stick on ubuntu?",
                        "category": "irc", "relevant": ["x/3"]}]


def test_a_guess_between_two_who_just_named_each_other_is_counted_apart(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # bob names ann (3), then ann asks bob nothing by name (4) and bob answers (5), linked; cat's question to
    # everyone (6) is followed by dan's line (7), who talked with no one.
    monkeypatch.setattr(irc, "ANNOTATED_FROM", 0)
    text = ("[10:00] <ann> my wifi drops\n[10:00] <cat> hi\n[10:00] <dan> hello\n[10:01] <bob> ann: which card\n"
            "[10:01] <ann> is it the driver?\n[10:02] <bob> probably the driver\n[10:02] <cat> anyone use kde?\n"
            "[10:03] <dan> i like tea\n")
    (tmp_path / "y.raw.txt").write_text(text, encoding="utf-8")
    (tmp_path / "y.annotation.txt").write_text("0 3 -\n3 4 -\n4 5 -\n", encoding="utf-8")
    table = irc.measure_irc([irc.read_log(tmp_path / "y.raw.txt")])
    assert table["question | neither names, talking=True"] == {"pairs": 1, "linked": 1.0, "same_conversation": 1.0}
    assert table["question | neither names, talking=False, to everyone"]["linked"] == 0.0


def test_the_one_a_question_names_is_the_one_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # cat asks bob by name right after dan's line; dan speaks next, then bob answers: bob's line is the one asked.
    monkeypatch.setattr(irc, "ANNOTATED_FROM", 0)
    (tmp_path / "y.raw.txt").write_text(
        "[10:00] <bob> the kernel is fine here\n[10:00] <dan> my fan is loud\n"
        "[10:01] <cat> bob: which kernel do you run?\n[10:01] <dan> still loud\n[10:02] <bob> 6.8 from proposed\n",
        encoding="utf-8")
    (tmp_path / "y.annotation.txt").write_text("0 0 -\n1 1 -\n0 2 -\n1 3 -\n2 4 -\n", encoding="utf-8")
    table = irc.measure_irc([irc.read_log(tmp_path / "y.raw.txt")])
    # Read from the line the question follows, the one asked would be dan, whose next line is the nearest guess.
    assert table["question | the one asked"] == {"pairs": 1, "linked": 1.0, "same_conversation": 1.0}


def test_an_export_reads_the_split_it_is_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A recall check on logs the rules were not read from: --split test exports the test folder, not dev.
    monkeypatch.setattr(irc, "ANNOTATED_FROM", 0)
    for split, author in (("dev", "dev_ann"), ("test", "test_ann")):
        (tmp_path / split).mkdir()
        (tmp_path / split / "x.raw.txt").write_text(LOG.replace("<ann>", f"<{author}>"), encoding="utf-8")
        (tmp_path / split / "x.annotation.txt").write_text(LINKS, encoding="utf-8")
    said: list[str] = []
    irc.main(["--irc", str(tmp_path), "--export", str(tmp_path / "out"), "--split", "test"], said.append)
    first = json.loads((tmp_path / "out" / "messages.jsonl").read_text().splitlines()[0])
    assert first["author"] == "test_ann" and said == [f"5 messages -> {tmp_path / 'out'}"]


def test_lines_are_counted_as_the_annotations_count_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A message holding a form feed, \x1c or U+2028 is still one line: the annotations number lines by "\n" alone.
    monkeypatch.setattr(irc, "ANNOTATED_FROM", 0)
    text = LOG.replace("anyone tried", "anyone\x0c tried\x1c the\u2028")
    (tmp_path / "x.raw.txt").write_text(text, encoding="utf-8", newline="\n")
    (tmp_path / "x.annotation.txt").write_text(LINKS, encoding="utf-8")
    log = irc.read_log(tmp_path / "x.raw.txt")
    assert [(line.index, line.author) for line in log.lines] == [(0, "ann"), (2, "cat"), (3, "bob"), (4, "bob"),
                                                                 (5, "ann")]
    assert log.linked(log.lines[0], log.lines[2])


def test_an_export_from_a_folder_with_no_log_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A wrong --irc path writes no empty files: it is an error that names the folder read.
    with pytest.raises(SystemExit) as exit_:
        irc.main(["--irc", str(tmp_path / "nowhere"), "--export", str(tmp_path / "out"), "--split", "test"])
    assert exit_.value.code == 2 and "no *.raw.txt log in" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
