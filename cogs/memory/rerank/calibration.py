"""The fixed calibration set the precision choice is measured on: chat-shaped queries, each with candidates of the
lengths recall offers (LoCoMo's messages: median 121 characters), so that pairs/s and fidelity measured at start
describe the prompts the bot scores. Changing it changes CALIBRATION_VERSION, so cached choices are measured again."""

from __future__ import annotations

CALIBRATION_VERSION = 1

CALIBRATION: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("When is Caroline going to the adoption agency interview?", (
        "I finally booked the interview with the adoption agency, it's next Friday at 10!",
        "lol same, my cat knocked the plant over again",
        "Did anyone watch the match last night? That last goal was unreal.",
        "Caroline said she was nervous about the home visit but the agency was really kind on the phone.",
        "I'm making lasagna tonight if anyone wants to come over after work, there will be way too much of it",
        "Reminder: the paperwork for the adoption needs two references, I asked Mel and my old manager.",
        "ok",
        "We moved the book club to Thursday because half of us are away this weekend for the festival in town.",
    )),
    ("what did Mel paint for the art show?", (
        "Mel's painting of the lake at sunrise got picked for the community art show!!",
        "Can someone send me the link to the server rules again?",
        "I painted a sunset last summer but never finished it, the colours felt off to me.",
        "The art show opens on the 14th, doors at 6, bring friends",
        "my internet keeps dropping every ten minutes, anyone else on this provider having trouble today?",
        "Mel has been going to pottery classes on Saturdays, she made a bowl with a little fish on it",
        "brb",
        "Honestly the best part of the weekend was the long walk by the river with the kids and the dog.",
    )),
    ("which GPU did Sam say he bought for the new build?", (
        "Sam: picked up a 4070 Super for the new build, finally replacing the old 1060",
        "New build is up! Ryzen 7, 32 GB, and the GPU runs surprisingly cool even under load.",
        "Does anyone know whether the patch notes mention the matchmaking changes or was that only a rumour?",
        "the PSU was the hard part, had to return the first one because the fan rattled",
        "good morning everyone",
        "I still think consoles are better value for most people, but do what you like with your money.",
        "Sam asked if 650 W is enough, I told him to go for 750 to be safe with the new card",
        "Trying a new recipe for banana bread, will report back with pictures if it doesn't burn this time",
    )),
)
