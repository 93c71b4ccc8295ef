"""questions.asks: which chat messages ask something, in the scripts and styles chat uses."""

from __future__ import annotations

import pytest

from cogs.memory.language.questions import answers, asks, to_everyone


@pytest.mark.parametrize("content", [
    "Anyone up for pizza tonight?",
    "anyone know a good plumber",            # chat drops the mark
    "which one",
    "is he expensive",
    "do we have a name for the gig poster yet",
    "@sam where did you park",
    "poor guy. how much was the vet",         # a remark, then the question
    "YES!! when do you start",
    "你什么时候到？",                          # full-width mark
    "你吃饭了吗",                              # Chinese particle, no mark
    "明日は来ますか。",                         # Japanese particle, then a full stop
    "내일 같이 갈까",                          # Korean -까
    "هل أنت قادم؟",                           # Arabic mark
    "可怜的家伙。看兽医花了多少钱",               # Chinese question word, no mark, no particle
    "太好了！！什么时候入职",
    "Daniel去哪里上班",
    "何時に出発する",                           # Japanese question word
    "어디서 만나",                              # Korean question word
])
def test_questions_ask(content: str) -> None:
    assert asks(content)


@pytest.mark.parametrize("content", [
    "the Pixel 8, the green one",
    "he did mine for 80",
    "nice. see you at 8",
    "sure, Main Street at 8",
    "biscuit obviously. pepper is an angel",
    "我喜欢吃北京烤鸭",
    "没什么，我随便问问",                        # the same words used as "nothing", "anything"
    "什么都行，你定",
    "任何时候都可以",
    "何か食べた。美味しかった",
    "언제나 고마워",
    "",
])
def test_statements_do_not(content: str) -> None:
    assert not asks(content)


def test_the_one_asked_may_answer_after_someone_elses_line() -> None:
    # jo: "new phone day!!" -> sam: "which one" -> kat: "rivera plumbing any good?" -> jo: "the Pixel 8". Who is
    # asked is a guess, so the next message stays a possible answer.
    assert answers("sam", "jo", [(3, "kat"), (4, "jo")]) == (3, 4)
    assert answers("sam", "jo", [(3, "jo"), (4, "jo")]) == (3,)
    assert answers("sam", "jo", [(3, "kat"), (4, "ravi")]) == (3,)


def test_with_no_one_asked_the_next_message_may_answer() -> None:
    # The question follows the asker's own message, or opens the channel.
    assert answers("sam", "sam", [(3, "kat"), (4, "jo")]) == (3,)
    assert answers("sam", "jo", []) == ()


def test_the_asker_s_own_next_lines_are_passed_over() -> None:
    # sam: "where should we eat?" -> sam: "somewhere cheap" -> kat: "tacos": the burst goes on; kat answers.
    assert answers("sam", None, [(3, "sam"), (4, "kat")]) == (4,)
    assert answers("sam", "jo", [(3, "sam"), (4, "kat"), (5, "jo")]) == (4, 5)
    assert answers("sam", "jo", [(3, "sam"), (4, "sam")]) == ()


@pytest.mark.parametrize("content", ["can anyone recommend an app to open rar files?",
                                     "what is everyone having for dinner", "does some one know the wifi password",
                                     "大家觉得这个方案怎么样", "有人去过吗"])
def test_a_question_to_the_room_is_put_to_everyone(content: str) -> None:
    assert to_everyone(content)


@pytest.mark.parametrize("content", ["but it works with 2.6.7 for you?", "why on earth would you need to do that?",
                                     "is there anyway to fix it", "你周末去哪儿"])
def test_a_question_to_one_person_is_not(content: str) -> None:
    assert not to_everyone(content)
