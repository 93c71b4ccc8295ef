"""Builds the discord fixture: a multi-party server, written for this project (bench/chatgen.py places the text).

python bench/data/discord/build.py   (writes messages.jsonl and queries.jsonl beside this file)
"""

from __future__ import annotations

import random
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.chatgen import Channel, compose, parse_chatter, parse_snippet, write  # noqa: E402

SEED = 25

GENERAL = [
    """
    #q dani: ok serious question
    dani: my landlord wants to raise the rent by 15%
    dani: is that even legal here
    marco: oof
    ... 4
    #a lin ^q: not in one go, the cap is 5% a year for old contracts. the tenants union on Rue Verte checks letters for free
    dani: omg ty lin. going thursday
    ? single-hop Where can Dani get her rent increase letter checked? = a
    ? single-hop How much can a landlord raise the rent per year on an old contract? = a
    """,
    """
    kofi: my talk got accepted!!!
    #a kofi: PyCon in Prague, 25 minutes, about making tiny bots that remember stuff
    ash: KOFI
    sam: 🎉🎉
    ... 5
    #q fern: when's your slot?
    #b kofi ^q: second day, 11:15, the small room lol
    ? single-hop What is Kofi's conference talk about? = a
    ? temporal When is Kofi speaking at the conference? = b
    """,
    """
    #q jules: has anyone used a standing desk long term, worth it?
    ... 3
    #a oskar ^q: had one 2 years. i stand maybe an hour a day tbh. the real win was the anti fatigue mat
    jules: lmao ok
    ? single-hop What did Oskar say was the best part of his standing desk setup? = a
    """,
    """
    theo: my sister's visiting next week and wants to see "something local"
    #q theo: ideas??
    ... 4
    #a mira ^q: the night market at the old docks, thursdays only. and the glass museum if it rains
    #b priya: +1 night market, get the dumplings from the stall with the red lanterns
    ? multi-hop What did people suggest Theo show his sister? = a,b
    """,
    """
    #q priya: ok which restaurant are we doing for the meetup
    priya: i need to book by thursday
    marco: somewhere with veggie options pls
    ... 3
    #a1 jules ^q: Casa Lupita on 5th? they do a huge veggie menu and take groups
    fern: ooh yes their tacos al pastor 🤤
    ... 2
    #a2 priya: ok booked Casa Lupita, 7:30 on the 23rd, table for 11
    ? single-hop Which restaurant did we pick for the meetup? = a1,a2
    ? temporal What time is the meetup dinner booked for? = a2
    """,
    """
    #q kofi: does anyone have a spare HDMI to USB-C adapter
    kofi: mine died right before my talk lmao
    ... 4
    #a ash ^q: i have two, grab one from my desk at the coworking place, left drawer
    kofi: legend
    ? single-hop Where did Ash say Kofi could get an adapter? = a
    """,
    """
    mira: update on the apartment hunt
    mira: we signed!!
    #a mira: 2 bedrooms in Brookfield, right by the tram stop, moving on the 3rd of next month
    dani: CONGRATS 🎉
    theo: brookfield is so nice, the bakery there is unreal
    ... 4
    #q sam: mira do you need help moving?
    #b mira ^q: yes please. renting a van for saturday morning, 9ish. pizza and beer after
    ? single-hop Which neighbourhood did Mira move to? = a
    ? temporal When is Mira's moving van booked? = b
    """,
    """
    #q lin: has anyone tried the new climbing gym, the one in the old train depot
    oskar: not yet
    ... 3
    #a fern ^q: went last week. bouldering is great, the top rope section is tiny tho. 18 bucks day pass
    lin: hm ok might try a tuesday
    ? single-hop How much is a day pass at the new climbing gym? = a
    """,
    """
    #a theo: psa my cat knocked my phone into the bath so if i'm not replying thats why 🙃
    dani: nooo
    dani: rice!!
    theo: it's in rice. it's been in rice for 2 days. it is not coming back
    ... 4
    #q marco: theo did the phone survive in the end?
    ... 2
    #b theo ^q: nope, got a refurbished pixel 7 for 240. cat is unrepentant
    ? single-hop How did Theo's phone get broken? = a
    ? single-hop What phone did Theo get after the bath incident? = b
    """,
    """
    #q jules: what's that podcast someone recommended about the history of fonts
    jules: i swear it was in here
    ... 5
    #a kofi ^q: Letterforms! the episode on Helvetica is the best one
    jules: ty
    ? single-hop What podcast about typefaces did Kofi recommend? = a
    """,
    """
    #a1 ash: i'm doing the 10k charity run on the 9th, sponsoring link if anyone wants to chip in
    #a2 ash: https://givefund.example/ash-runs-for-the-shelter
    sam: donated!
    ash: ty sam ❤️ it's for the dog shelter on Miller Road
    ... 3
    #q dani: ash how'd the run go??
    #b ash ^q: 52 minutes!! wanted under 55 so very happy. legs are dead
    ? single-hop What cause was Ash running the charity 10k for? = a1,a2
    ? single-hop What time did Ash finish the 10k in? = b
    """,
    """
    #q oskar: anyone know a decent dentist near the center, mine retired
    ... 6
    #a priya ^q: dr. Okafor on Hale street. super gentle and she doesn't lecture you about flossing
    oskar: sold
    ? single-hop Which dentist did Priya recommend? = a
    """,
    """
    dani: guess who got the job 👀
    sam: NO WAY
    #a dani: starting at Northwind as a junior data analyst on the 1st
    dani: remote 3 days a week too
    marco: dani that's huge, congrats
    ? single-hop Where is Dani starting her new job? = a
    """,
    """
    #q fern: my sourdough keeps coming out flat. like pancake flat
    fern: any ideas
    ... 3
    #a marco ^q: your starter's probably too young. feed it twice a day for a week before baking, keep it somewhere warm
    #b lin: also do the cold retard overnight in the fridge, it holds its shape way better
    ? multi-hop What advice did people give Fern for her flat sourdough? = a,b
    """,
    """
    sam: random but does anyone want my old bike
    #a sam: blue Trek, needs new brake pads, free to whoever picks it up
    ... 5
    #q kofi ^a: me!! can i grab it sunday
    sam: yeah come by after 2
    ? single-hop Who is taking Sam's old bike? = q
    """,
    """
    #q mira: what's the wifi password at the coworking space again
    ... 4
    #a oskar ^q: it changed, it's now bluepelican42
    mira: ty
    ? single-hop What's the wifi password at the coworking space? = a
    """,
]

DEV = [
    """
    #q kofi: what's our python minimum now
    ... 3
    #a priya ^q: 3.11. dropped 3.10 in the last release because of the TaskGroup stuff
    ? single-hop Why did the project drop Python 3.10? = a
    """,
    """
    theo: sorry if this is a dumb q
    #q theo: how do i run just the storage tests locally, the full suite takes forever
    ... 4
    #a lin ^q: pytest -q tests/storage -x, and set FAST_MODELS=1 so it uses the tiny weights
    theo: not dumb, ty!!
    ? single-hop How can Theo run only the storage tests? = a
    """,
    """
    marco: i keep getting rate limited by the github api on the release script
    #a oskar: use the token from the bot account, it has 5000 req/h instead of 60
    marco: oh duh
    ? single-hop How did Oskar suggest getting around the GitHub rate limit? = a
    """,
    """
    #q priya: reminder we need to rotate the deploy password, the old one was in that leaked screenshot
    marco: oof yeah
    ... 3
    #a oskar ^q: i'll do it friday the 15th after the release, will dm everyone the new one
    ? temporal When did Oskar say he would rotate the deploy password? = a
    """,
    """
    #q lin: ci is failing on main, something about the sqlite version?
    lin: https://ci.example.dev/runs/8812
    ... 4
    #a kofi ^q: that's the ubuntu image bump, it ships sqlite 3.37 which has no json_each fix. pinned the runner to 22.04 for now
    lin: ahh ok ty
    ? single-hop Why was CI failing on main? = a
    """,
    """
    marco: ok so i benchmarked the new parser
    marco: it's like
    #a marco: 3.4x faster on the big fixture, 1.2x on small files
    marco: memory about the same
    jules: nice!!
    theo: does it handle the weird windows line endings though
    ... 3
    #b marco: it does now, added a test with \\r\\n files
    ? single-hop How much faster was Marco's new parser on the big fixture? = a
    ? single-hop Did the new parser handle Windows line endings? = b
    """,
    """
    #q theo: who's reviewing the auth PR, it's been open for 2 weeks
    theo: #412
    ... 5
    #a priya ^q: i'll take it tonight
    ... 4
    #b priya: reviewed 412, mostly fine, asked for the token expiry to be configurable instead of hardcoded 24h
    ? single-hop What did Priya ask to change in the auth PR? = b
    ? single-hop Who took the review of the auth pull request? = a
    """,
    """
    #a jules: heads up i'm off from the 20th to the 27th, hiking in the Dolomites, zero signal
    kofi: jealous
    jules: kofi is covering my on-call
    ? temporal When is Jules away? = a
    """,
    """
    #q oskar: do we have a decision on postgres vs sqlite for the hosted version
    lin: i thought we said postgres
    ... 4
    #a priya ^q: postgres for hosted, sqlite stays the default for self-hosting. decided on the call tuesday
    ? single-hop Which database did they choose for the hosted version? = a
    """,
    """
    kofi: fyi the docs site is down
    kofi: 502 on every page
    ... 2
    #q lin: any idea what happened with the docs?
    ... 3
    #a kofi ^q: the cert expired 🤦 renewed it and added a cron for certbot, should not happen again
    ? single-hop Why did the docs site go down? = a
    """,
    """
    #q theo: which logging lib are we standardising on
    marco: structlog?
    #a jules ^q: we said stdlib logging with %-style args, no extra dependency
    theo: fine by me
    ? single-hop What logging approach did the project settle on? = a
    """,
    """
    #q lin: is there a style guide for commit messages somewhere
    ... 5
    #a oskar ^q: CONTRIBUTING.md, section 3. imperative mood, under 72 chars, say why not what
    ? single-hop Where are the commit message rules written down? = a
    """,
]

THREAD = [
    """
    #q lin: do we announce 1.4 on the blog or just github
    ... 3
    #a priya ^q: both, plus the mastodon account. marco's writing the blog post
    ? single-hop Who is writing the 1.4 blog post? = a
    """,
    """
    #q priya: ok thread for the 1.4 release. what's still blocking
    marco: the migration for the index column
    #a oskar: and the changelog, nobody wrote it yet
    ... 3
    #b marco: migration merged
    priya: 🙌
    ... 4
    #c lin: changelog done, i grouped it by breaking / features / fixes
    ? multi-hop What was still blocking the 1.4 release? = a,b
    ? single-hop How did Lin organise the changelog? = c
    """,
    """
    #q oskar: when are we actually tagging 1.4
    ... 3
    #a priya ^q: thursday 4pm utc if the rc has no new bugs by wednesday night
    oskar: ok
    ? temporal When will 1.4 be tagged? = a
    """,
    """
    lin: found a bug in the rc
    #a lin: importing a backup with emoji in channel names crashes, utf-8 decode error
    ... 4
    #b marco ^a: fixed in rc2, we were opening the file without an encoding
    ? single-hop What bug did Lin find in the release candidate? = a
    ? single-hop What caused the import crash in the release candidate? = b
    """,
]

GAMES = [
    """
    #q dani: what's a good couch co-op game for people who don't game
    dani: my parents are visiting lol
    ... 3
    #a fern ^q: Overcooked! chaos but everyone gets it in 2 minutes
    #b mira: or It Takes Two if it's just 2 players, it's gorgeous
    ? multi-hop What games were suggested for Dani's non-gamer parents? = a,b
    """,
    """
    jules: speedrun update
    #a jules: got Celeste any% down to 38:12
    jules: the summit chapter is still a mess
    sam: sub 38 soon
    ? single-hop What's Jules's best time in Celeste? = a
    """,
    """
    #q ash: does anyone still have the dnd session notes from last time
    ash: i forgot what happened with the dragon
    ... 5
    #a theo ^q: we didn't fight it! we bribed it with the cursed crown and it flew off north
    ? single-hop What happened with the dragon in the last D&D session? = a
    """,
    """
    #q sam: game night this friday? what are we playing
    dani: not monopoly
    fern: NOT monopoly
    ... 3
    #a ash ^q: i just got Wingspan, it's super chill, plays 5
    mira: wingspan yes
    ... 3
    #b sam: ok friday 8pm my place, Wingspan. bring snacks
    ? single-hop Which board game did we play on game night? = a,b
    ? temporal What time is game night at Sam's? = b
    """,
    """
    theo: finally beat the last boss in Hollow Knight
    #a theo: took me 47 tries
    #b theo: radiance is pure evil
    jules: 47 is actually not bad
    ? single-hop How many attempts did Theo need for the final Hollow Knight boss? = a
    """,
    """
    #q fern: anyone want to do the co-op campaign in Deep Rock
    fern: i'm usually on around 9pm
    ... 4
    #a mira ^q: me! i'm Driller main, add me, mirabelle#2231
    ? single-hop What is Mira's gamer tag? = a
    """,
    """
    #q jules: is the steam summer sale worth it this year
    dani: depends what you want lol
    ... 3
    #a ash ^q: Disco Elysium is 85% off, just get that and nothing else
    jules: ok ok
    ? single-hop What game did Ash say to buy in the Steam sale? = a
    """,
    """
    dani: our minecraft server is moving
    #a dani: new ip is mc.pixelhollow.net, old one shuts down sunday
    dani: your builds are copied over
    ... 3
    #q sam: dani is the nether copied over too?
    #b dani ^q: everything except the end, that one regenerates
    ? single-hop What is the new address of the Minecraft server? = a
    ? single-hop Which dimension was not copied to the new Minecraft server? = b
    """,
    """
    #q mira: the tournament sign-up closes when?
    ... 5
    #a theo ^q: sunday midnight, link's pinned. teams of 3
    mira: ok i'll ask fern and ash
    ? temporal When do the tournament sign-ups close? = a
    """,
    """
    ash: rage quitting elden ring for the night
    ash: the tree sentinel is just a wall for me
    #q fern: have you tried summoning?
    #a ash ^q: with the jellyfish spirit ash, yeah. still dead
    ... 6
    #b ash: update: beat it by just riding past it and coming back at level 30 lol
    ? single-hop How did Ash eventually get past the Tree Sentinel? = b
    """,
]

MEETUP = [
    """
    #q sam: do we need to bring anything for saturday
    ... 4
    #a priya ^q: name tags are on me, just bring a jacket, the boat tour is cold even in summer
    ? single-hop Why should people bring a jacket to the meetup? = a
    """,
    """
    #q fern: who's doing photos this year
    ... 3
    #a ash ^q: me, borrowing my uncle's film camera lol, expect blurry
    ? single-hop Who is taking photos at the meetup? = a
    """,
    """
    #q kofi: are we doing a gift swap at the meetup or not
    lin: yes!! secret santa style
    ... 4
    #a priya ^q: yes, 20 euro limit. draw names by friday, i'll set it up on the website
    ? single-hop What's the spending limit for the meetup gift swap? = a
    """,
    """
    #q oskar: how is everyone getting there
    marco: train
    ... 3
    #a theo: i'm driving from the north, have 3 free seats if anyone's near Eastgate
    #b sam ^a: i'll take one! ping me
    ? single-hop Who has free seats in their car for the meetup? = a
    ? single-hop Who is getting a lift with Theo? = b
    """,
    """
    #q mira: whats the hotel situation
    ... 4
    #a jules ^q: most of us are at the Harbour Inn, 89 a night with breakfast, code DISCORD10 gets 10% off
    ? single-hop Where are most people staying for the meetup? = a
    ? single-hop What discount code works for the meetup hotel? = a
    """,
    """
    dani: can we do something during the day too
    #a fern: escape room? there's one by the harbour with a pirate theme, fits 6
    ash: i'm in
    ... 3
    #b dani: booked the pirate escape room for 2pm saturday, 6 spots, first come first served
    ? single-hop What activity did we book for the afternoon of the meetup? = a,b
    """,
    """
    #q marco: does anyone have allergies i should know about for the snacks
    ... 5
    #a lin ^q: peanuts, sorry! the bad kind
    #b kofi ^q: no shellfish for me
    ? multi-hop Which food allergies did people mention for the meetup snacks? = a,b
    """,
]

CHATTER = """
A: wait
A: did they really cancel the bus line to the airport
A: how am i supposed to get there now
B: taxi and cry

A: ok finally watched that show everyone was talking about
A: the one with the chef
A: it was SO stressful
B: yes chef

A: the dog ate my airpod
A: the left one
A: vet says it'll "pass"
B: oh no 💀

A: does anyone want sourdough discard
A: i have way too much
B: make crackers!

A: my code works and i don't know why
A: not touching it
B: classic

A: cat is sitting on my keyboard
A: sdfjhsdkjfhsd
A: sorry that was her

A: i think i'm getting a cold
B: soup time
A: already on it

A: can't sleep
A: thinking about that one time i waved at someone who wasn't waving at me
B: it's 2am go to bed

A: just got my first paycheck from the new gig
A: buying myself a nice pen
B: treat yourself

A: ok unpopular opinion
A: the second movie was better
B: you're wrong but i respect it

A: who else has a tab open they haven't looked at in a week
B: like 12 of them

A: i just found out my grandma has a tiktok
A: she has more followers than me
B: legend

A: have u seen the new emoji they added
B: the shaking face one?
A: 🫨 this one

A: tried making ramen from scratch
A: 9 hours
A: it was fine. just fine
B: the journey matters

A: my upstairs neighbour is learning the trumpet
B: noooo
A: only knows 2 notes

A: offline for a bit, dentist

A: lunch was a disaster
A: dropped the whole tray

A: is it bad that i name my houseplants
B: no. mine is called Kevin

A: ok the gym is empty at 6am, that's the secret
B: the secret is not being awake at 6am

A: sorry been mia, work is insane this week
B: np hang in there

A: lol
B: lmao

A: brb coffee
A: ok back

A: is it just me or is discord super laggy rn
B: same here
C: fine for me

A: good morning 🌞
B: morning

A: this weather is so grim
B: it's been raining for 5 days straight
A: my socks have not been dry since monday

A: https://youtu.be/dQw4w9WgXcQ
B: not clicking that
A: coward

A: anyone else watching the eclipse thing tonight
B: it's cloudy here :(

A: i just ate an entire bag of crisps for lunch
B: balanced diet
A: potatoes are vegetables

A: lol
B: 😂

A: whoever invented mondays owes me an apology

A: oh no
A: i just replied all to the whole company
B: F
C: what did it say
A: "lol ok"

A: my neighbour is drilling at 8am again
A: on a sunday
B: violence is never the answer. usually

A: hot take: pineapple on pizza is fine
B: get out
C: it's fine!!

A: cant believe its already friday
B: this week lasted a year

A: does anyone know how to get wax out of a tablecloth
B: iron + paper towel
A: oh smart

A: my plant is dying again
B: overwatering
A: i barely water it
B: underwatering then

A: ok who keeps adding reactions to my old messages at 3am
B: 👻

A: taking a break from screens for the evening, see yall tomorrow
B: gn!

A: typing with one hand, holding a sleeping baby cat
B: pics or it didnt happen
A: [image]
B: omg

A: today i learned octopuses have three hearts
B: and blue blood
C: overachievers

A: bruh my train is 40 min late

A: ngl i forgot what day it is

A: good luck on the exam!!
B: thank youu i'm dying

A: that new album is on repeat for me
B: which one
A: the one with the saxophone on every track
B: very specific

A: ok i need a name for a goldfish
B: Sushi
C: Bubbles is classic
A: Sushi it is

A: has anyone seen my blue umbrella, i think i left it somewhere

A: lmaooo
B: i cant

A: the vending machine ate my coin again
B: it's a tax

A: ugh headache
B: water + nap

A: is it weird that i like airport food
B: yes
C: no

A: just saw a fox in the parking lot!!
B: 🦊
A: it looked at me like i owed it money

A: brb
B: k

A: what is everyone having for dinner
B: leftovers
C: cereal, i'm an adult

A: nice
B: nice nice

A: the printer at work is possessed
A: it only prints in pink now
B: honestly an upgrade

A: i have 47 tabs open and i need all of them
B: you need help

A: finally cleaned my keyboard, found 3 euros worth of crumbs

A: spent an hour choosing a font for a birthday card

A: my cousin just got engaged at a football match on the big screen
B: bold move
A: she said yes thank god

A: haha
B: hahaha

A: someone explain crypto to me like i'm five
B: no
C: internet money that goes up and down

A: just finished a 3 hour nap
A: i have no idea what year it is
B: 2019, you missed a lot

A: it's snowing?? in april??
B: climate is vibes now

A: anyone here good at knots
B: why
A: tying a tree to my car roof
B: please dont

A: my toddler just called the vacuum "angry elephant"
B: accurate

A: ok that meeting could have been an email

A: ty all for the help earlier btw
B: anytime

A: 🫠

A: i think the office coffee machine is getting worse on purpose

A: new profile pic who dis
B: ooh nice
C: very moody

A: is there a name for the fear of running out of phone battery
B: yes, being alive in 2024

A: guys i accidentally dyed my shirts pink
B: barbie era
"""


def channels() -> list[Channel]:
    everyone = ["priya", "marco", "jules", "sam", "dani", "oskar", "lin", "fern", "theo", "kofi", "mira", "ash"]
    dev = ["priya", "marco", "jules", "oskar", "lin", "theo", "kofi"]
    games = ["sam", "dani", "fern", "ash", "mira", "theo", "jules"]
    start = datetime(2024, 3, 4, 9, 0)
    return [
        Channel("general", everyone, [parse_snippet(s) for s in GENERAL], start, chatter_rate=0.6),
        Channel("dev", dev, [parse_snippet(s) for s in DEV], start.replace(hour=10), chatter_rate=0.5),
        Channel("release-1.4", ["priya", "marco", "oskar", "lin"], [parse_snippet(s) for s in THREAD],
                start.replace(day=11, hour=14), parent="dev", chatter_rate=0.15, concurrent=2),
        Channel("games", games, [parse_snippet(s) for s in GAMES], start.replace(hour=18), chatter_rate=0.55),
        Channel("meetup", everyone, [parse_snippet(s) for s in MEETUP], start.replace(day=6, hour=12)),
    ]


def build(directory: Path) -> None:
    """Write messages.jsonl and queries.jsonl into ``directory``."""
    rng = random.Random(SEED)
    chatter = parse_chatter(CHATTER)
    queries: list[dict[str, object]] = []
    built = channels()
    for channel in built:
        compose(channel, chatter, rng, queries, chatter_after=rng.randint(10, 30))
    write(directory, built, queries)


def main() -> None:
    build(Path(__file__).resolve().parent)


if __name__ == "__main__":
    main()
