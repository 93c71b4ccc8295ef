"""Builds the named fixture: questions that name people, channels and times, in English and Chinese, over a
multi-party server written for this project (README.md beside this file).

python bench/data/named/build.py   (writes messages.jsonl and queries.jsonl beside this file)
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

SEED = 34
HERE = Path(__file__).resolve().parent
MEMBERS = ("alice", "bob", "carol", "dmitri", "sunny", "ok", "小明", "王芳", "李雷")
CHANNELS = ("general", "trips", "tech", "music", "闲聊", "美食")
ASKED = "2024-05-15T12:00:00"  # a Wednesday: last week is 6-12 May, yesterday the 14th

# label: (when, channel, author, text). Each topic is said by several members, in several channels, at several
# times, so that what a question names decides which message answers it.
TOPICAL = {
    "trip-alice-may": ("05-08 19:12", "trips", "alice",
                       "booked the cabin for our lake trip, it has a sauna and a rowing boat"),
    "trip-alice-apr": ("04-10 18:40", "trips", "alice",
                       "for the lake trip I think we should rent a van instead of taking two cars"),
    "trip-bob": ("05-09 08:30", "trips", "bob", "lake trip update: the ferry to the island leaves at 7am sharp"),
    "trip-carol": ("05-14 10:05", "general", "carol", "is the lake trip still happening? I need to book time off work"),
    "trip-dmitri": ("05-14 21:30", "trips", "dmitri",
                    "lake trip budget comes to about 300 each with the cabin and the ferry"),
    "trip-sunny": ("04-28 13:00", "trips", "sunny", "I can't make the lake trip, maybe the next one"),
    "laptop-carol": ("05-13 09:20", "tech", "carol",
                     "my laptop battery barely lasts an hour now, thinking of a new laptop"),
    "laptop-dmitri": ("04-25 16:00", "tech", "dmitri",
                      "laptop recommendation: the thinkpad x1 carbon is light and the keyboard is great"),
    "laptop-alice": ("05-09 11:45", "general", "alice",
                     "spilled coffee all over my laptop keyboard this morning, keys are sticky"),
    "laptop-bob": ("05-14 15:10", "tech", "bob",
                   "laptop tip: let the battery run down and charge it fully once a month"),
    "laptop-lilei": ("05-02 12:00", "tech", "李雷", "我的笔记本电脑风扇声音很大，是不是该清灰了"),
    "concert-sunny": ("05-11 23:10", "music", "sunny", "the concert tonight was amazing, the drummer was unreal"),
    "concert-bob": ("05-04 10:00", "music", "bob", "concert tickets for the june show are already sold out"),
    "concert-alice": ("05-14 17:00", "music", "alice", "anyone going to the concert next month? I have a spare ticket"),
    "concert-carol": ("04-13 22:00", "music", "carol", "that concert was way too loud, my ears are still ringing"),
    "hotpot-xiaoming-may": ("05-07 20:00", "美食", "小明", "上周末那家火锅店太辣了，下次换一家吧"),
    "hotpot-wangfang": ("05-14 12:30", "美食", "王芳", "火锅店我订好了，周六晚上七点，六个人"),
    "hotpot-xiaoming-apr": ("04-20 19:00", "闲聊", "小明", "我觉得火锅不如烧烤，烧烤更热闹"),
    "hotpot-bob": ("05-10 18:00", "美食", "bob", "the hotpot place near the station has a great mushroom broth"),
    "hotpot-lilei": ("05-12 13:00", "美食", "李雷", "火锅蘸料我推荐麻酱加蒜泥，特别香"),
    "move-wangfang": ("05-12 10:00", "闲聊", "王芳", "我下个月搬家，周末有人能帮忙搬箱子吗"),
    "move-xiaoming": ("05-08 21:00", "闲聊", "小明", "搬家公司我推荐蚂蚁搬家，价格还算公道"),
    "move-carol": ("05-02 09:00", "general", "carol", "free moving boxes at the grocery store on main street"),
    "move-lilei": ("04-15 14:00", "闲聊", "李雷", "上次搬家把我的显示器摔坏了，搬家一定要包好"),
    "dentist-dmitri": ("05-14 08:00", "general", "dmitri",
                       "dentist appointment moved to thursday, the wisdom tooth is coming out"),
    "dentist-sunny": ("04-22 11:00", "general", "sunny", "my dentist says I grind my teeth at night"),
    "dentist-wangfang": ("05-06 16:00", "闲聊", "王芳", "牙医说我要补两颗牙，下周再去一次"),
    "games-ok-may": ("05-10 17:00", "general", "ok", "game night friday at 8, bring snacks, we play codenames"),
    "games-ok-apr": ("04-26 17:00", "general", "ok", "game night friday at 8, we play catan this time"),
    "games-carol": ("05-13 22:40", "general", "carol", "game night was fun, codenames with eight people is chaos"),
    "picnic-carol": ("05-12 18:00", "general", "carol",
                     "the picnic was lovely, sunny all afternoon and nobody got sunburnt"),
    "picnic-alice": ("04-21 18:00", "general", "alice", "picnic got rained out, we ended up in the cafe"),
}

# (question, relevant labels, category, lang[, asked_at]): category says what the question names.
QUESTIONS = [
    ("what did <@alice> say about the lake trip last week", ["trip-alice-may"], "author+time", "en"),
    ("what did alice say about the lake trip last week", ["trip-alice-may"], "author+time", "en",
     "2024-05-13T09:00:00"),
    ("what did alice say about the trip last month", ["trip-alice-apr"], "author+time", "en"),
    ("what did bob say about the lake trip", ["trip-bob"], "author", "en"),
    ("who asked in <#general> about the lake trip yesterday", ["trip-carol"], "channel+time", "en"),
    ("how much does the lake trip cost, dmitri said yesterday", ["trip-dmitri"], "author+time", "en"),
    ("what did @sunny say about the lake trip", ["trip-sunny"], "author", "en"),
    ("what did carol say about her laptop", ["laptop-carol"], "author", "en"),
    ("which laptop did dmitri recommend in #tech", ["laptop-dmitri"], "author+channel", "en"),
    ("laptop keyboard trouble last week", ["laptop-alice"], "time", "en"),
    ("what laptop battery tip was given in the tech channel yesterday", ["laptop-bob"], "channel+time", "en"),
    ("李雷说笔记本电脑怎么了", ["laptop-lilei"], "author", "zh"),
    ("how was the concert on Saturday", ["concert-sunny"], "time", "en"),
    ("what did carol think of the concert last month", ["concert-carol"], "author+time", "en"),
    ("who has a spare concert ticket, said yesterday", ["concert-alice"], "time", "en"),
    ("what did bob say about concert tickets", ["concert-bob"], "author", "en"),
    ("上周小明说火锅怎么样", ["hotpot-xiaoming-may"], "author+time", "zh"),
    ("王芳昨天说了火锅的什么事", ["hotpot-wangfang"], "author+time", "zh"),
    ("上个月小明对火锅有什么看法", ["hotpot-xiaoming-apr"], "author+time", "zh"),
    ("上周 Bob 说了什么吃的", ["hotpot-bob"], "author+time", "zh"),
    ("李雷推荐什么火锅蘸料", ["hotpot-lilei"], "author", "zh"),
    ("三天前谁说要搬家", ["move-wangfang"], "time", "zh"),
    ("上周小明推荐了哪家搬家公司", ["move-xiaoming"], "author+time", "zh"),
    ("在闲聊频道李雷说搬家怎么了", ["move-lilei"], "author+channel", "zh"),
    ("where can I get moving boxes, carol said", ["move-carol"], "author", "en"),
    ("what did the dentist say yesterday", ["dentist-dmitri"], "time", "en"),
    ("what did @sunny say about the dentist", ["dentist-sunny"], "author", "en"),
    ("王芳上周去看牙医怎么样", ["dentist-wangfang"], "author+time", "zh"),
    ("what did <@ok> post about game night last week", ["games-ok-may"], "author+time", "en"),
    ("game night in April, what did we play", ["games-ok-apr"], "time", "en"),
    ("what was the ferry time, said on May 9", ["trip-bob"], "time", "en"),
    ("2024-05-13 laptop battery", ["laptop-carol"], "time", "en"),
    ("5月8日 搬家公司", ["move-xiaoming"], "time", "zh"),
    ("in April what did people say about the concert", ["concert-carol"], "time", "en"),
    ("4月的野餐怎么样", ["picnic-alice"], "time", "zh"),
    # Controls: a member's name that is also a word, and questions that name nothing.
    ("was it sunny at the picnic", ["picnic-carol"], "common-word", "en"),
    ("ok so how was game night", ["games-carol"], "common-word", "en"),
    ("who recommended a moving company", ["move-xiaoming"], "none", "en"),
    ("which laptop has a great keyboard", ["laptop-dmitri"], "none", "en"),
    ("火锅蘸料推荐", ["hotpot-lilei"], "none", "zh"),
]

# Chatter between the topics, by anyone, anywhere, any time: it makes each channel a multi-party stream and makes
# "ok" a word far more often than a member.
CHATTER = [
    "ok", "ok sounds good", "ok see you then", "lol", "gg", "nice", "morning all", "anyone up for a walk later",
    "brb coffee", "haha true", "same", "did anyone watch the match last night", "my cat knocked over the plant again",
    "what's everyone having for lunch", "traffic is terrible today", "finally friday", "ok ok I'll stop",
    "that's wild", "thanks!", "good night everyone", "sunny day today, finally", "ok fair", "who's online",
    "I need more coffee", "the new season dropped", "can't believe it's already may", "ok that makes sense",
    "好的", "哈哈哈", "早上好", "今天好累", "有人吃饭吗", "周末愉快", "收到", "我先下了", "这个好笑", "下雨了",
    "明天见", "太热了", "ok 没问题", "在吗", "刚下班",
]


def _time(stamp: str) -> datetime:
    return datetime.strptime(f"2024-{stamp}", "%Y-%m-%d %H:%M")


def compose() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The messages, topics and chatter in time order, and the questions with their evidence's ids."""
    rng = random.Random(SEED)
    start, end = datetime(2024, 4, 1), datetime(2024, 5, 15, 11, 0)
    posts = [(_time(when), channel, author, text, label) for label, (when, channel, author, text) in TOPICAL.items()]
    span = int((end - start).total_seconds())
    for _ in range(360):
        posts.append((start + timedelta(seconds=rng.randrange(span)), rng.choice(CHANNELS), rng.choice(MEMBERS),
                      rng.choice(CHATTER), None))
    posts.sort(key=lambda post: post[0])
    messages: list[dict[str, object]] = []
    ids: dict[str, str] = {}
    counts: dict[str, int] = {}
    for moment, channel, author, text, label in posts:
        counts[channel] = counts.get(channel, 0) + 1
        msg_id = f"{channel}/{counts[channel]}"
        if label is not None:
            ids[label] = msg_id
        messages.append({"channel": channel, "msg_id": msg_id, "author": author, "ts": moment.isoformat(),
                         "text": text})
    channel_of = {label: channel for label, (_, channel, _, _) in TOPICAL.items()}
    queries = [{"channel": channel_of[relevant[0]], "qid": f"named/q{number}", "question": question,
                "category": category, "lang": lang, "relevant": [ids[label] for label in relevant],
                "asked_at": rest[0] if rest else ASKED, "guild_wide": True}
               for number, (question, relevant, category, lang, *rest) in enumerate(QUESTIONS, start=1)]
    return messages, queries


def build(directory: Path = HERE) -> None:
    """Writes messages.jsonl and queries.jsonl into ``directory``."""
    messages, queries = compose()
    for name, rows in (("messages.jsonl", messages), ("queries.jsonl", queries)):
        with (directory / name).open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


if __name__ == "__main__":
    build()
