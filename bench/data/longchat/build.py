"""Builds the longchat fixture: long sessions where an answer comes far below its question, written for this project.

python bench/data/longchat/build.py   (writes messages.jsonl and queries.jsonl beside this file)

Each topic is asked, drifts away for tens of messages (``... N``: at least N messages of other topics and chatter),
and is answered later, often by someone coming back to it ("re the NAS thing earlier"). The off-topic chatter is
this fixture's own and the discord fixture's (bench/data/discord/build.py), both written for the project.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.chatgen import Channel, compose, parse_chatter, parse_snippet, write  # noqa: E402

SEED = 2525

HOMELAB = [
    """
    #q alex: how much power does everyone's rack pull? my bill jumped and i'm suspicious of the old dell
    chen: the r710? that thing is a space heater
    ... 40
    #a bea: alex i measured mine with a smart plug: the whole shelf idles at 58 watts. the old dell alone was 140 before i retired it
    ? single-hop How many watts does Bea's shelf idle at? = a
    """,
    """
    #q bea: what's the least painful way to get https on internal services? self signed warnings are driving me nuts
    ... 35
    #a dmitri: on the https thing bea: caddy with a dns challenge. you get real let's encrypt certs for internal names, one line per service in the caddyfile
    ? single-hop How did Dmitri suggest getting HTTPS on internal services? = a
    """,
    """
    #q chen: anyone running home assistant on a pi still or did everyone give up
    ... 30
    #a alex: chen re home assistant: moved it off the pi to a vm on the proxmox box, the sd card died twice in a year
    ? single-hop Why did Alex move Home Assistant off the Raspberry Pi? = a
    """,
    """
    #q alex: what's everyone using for backups of the nas? i'm on nothing right now which is terrifying
    bea: same honestly
    ... 30
    #a chen: coming back to alex's backup question from earlier. i run restic to a Backblaze B2 bucket every night at 3, costs me about 2 dollars a month for 400 gigs
    alex: oh that's cheap
    ? single-hop What does Chen use to back up the NAS? = a
    ? single-hop How much does Chen pay a month for offsite backups? = a
    """,
    """
    #q dmitri: my pihole keeps dropping dns for like 30 seconds every few hours. any idea
    alex: weird
    ... 25
    #a bea: dmitri re the pihole dropouts: check if your router hands out a second dns server. mine was giving clients 8.8.8.8 as a fallback and they'd flip between them
    ... 20
    #b dmitri: bea you were right, the router had a secondary dns set. removed it and no drops since yesterday
    ? single-hop What was causing Dmitri's Pi-hole DNS dropouts? = a,b
    """,
    """
    #q bea: which ups did people end up buying? the power flickers here every storm
    ... 40
    #a dmitri: sorry missed the ups question. i got an APC Back-UPS 900, gives the nas and router about 25 minutes, and it talks to the nas over usb so it shuts down cleanly
    ? single-hop Which UPS does Dmitri have? = a
    ? single-hop How long does Dmitri's UPS keep the NAS running? = a
    """,
    """
    #q chen: has anyone moved from docker compose to kubernetes at home and regretted it
    alex: lol
    bea: define regret
    ... 35
    #a alex: ok so on the k8s thing. i tried k3s for 4 months. went back to compose. upgrades kept breaking the ingress and i spent weekends fixing my own fun
    ? single-hop Why did Alex go back from k3s to Docker Compose? = a
    """,
    """
    #q alex: what temp is your server closet running at? mine is 34 degrees and i'm nervous
    ... 20
    #a chen: mine sat at 31 until i put a 120mm fan in the door vent, now 26. costs nothing, just run it off a usb port
    ... 15
    #b alex: did the fan thing, closet is down to 28, thanks chen
    ? single-hop How did Chen cool down his server closet? = a
    ? single-hop What temperature did Alex's closet drop to? = b
    """,
    """
    #q bea: any good cheap mini pcs for a second node
    ... 45
    #a dmitri: re mini pcs: the Lenovo M720q off ebay, got two for 90 each. 8th gen i5, takes a pcie card if you buy the riser
    ? single-hop Which mini PC did Dmitri recommend for a second node? = a
    ? single-hop How much did Dmitri pay for each mini PC? = a
    """,
    """
    #q dmitri: how do you all get to your stuff from outside the house without opening ports
    ... 30
    #a bea: tailscale on everything. the nas, my phone, my laptop. took 20 minutes to set up and i haven't touched the router since
    ? single-hop How does Bea reach her home server from outside without opening ports? = a
    """,
    """
    alex: drive in the array just started clicking
    #q alex: is it dead or dying or what do i do first
    ... 25
    #a chen: for the clicking drive: first copy off anything that isn't backed up, then check smart for reallocated sectors. if that number is climbing it's done
    ... 20
    #b alex: smart says 812 reallocated sectors. rip. ordered a 12TB ironwolf
    ? single-hop What replacement drive did Alex order? = b
    ? multi-hop What did Chen say to do first about the clicking drive and what did the SMART data show? = a,b
    """,
]

BOOKCLUB = [
    """
    #q kemi: is anyone going to the author talk at the festival? i can't remember the date
    ... 35
    #a lars: kemi the festival talk is saturday the 23rd at 3, at the old town hall. tickets are 8 euros at the door
    ? temporal When is the author talk at the festival? = a
    ? single-hop Where is the festival author talk? = a
    """,
    """
    #q jonah: can someone remind me who suggested the poetry month? i want to blame them lovingly
    ... 40
    #a ines: jonah it was ruth's idea, the poetry month. she brought the Mary Oliver collection
    ? single-hop Who suggested the poetry month? = a
    """,
    """
    #q ines: ok what are we reading in march? we said something short after the last brick
    jonah: under 300 pages please
    ... 30
    #a ruth: back to the march pick: i'd vote Piranesi. 250ish pages and it's strange in a good way
    kemi: yes!!
    ... 20
    #b ines: ok Piranesi wins for march, 7 votes to 2
    ? single-hop Which book did the club pick for March? = a,b
    """,
    """
    #q lars: where are we meeting next time? the café was too loud
    ... 25
    #a kemi: lars for the next meeting, the library has a free room on the 2nd floor on tuesday evenings, i reserved it for 7pm
    ? single-hop Where is the book club meeting next time? = a
    ? temporal At what time is the library room reserved? = a
    """,
    """
    #q jonah: did anyone actually finish the last one, the russian one
    ruth: i got to the wedding
    lars: lol
    ... 35
    #a kemi: i finished the russian one last night!! the last 80 pages made the whole thing worth it. the brother's letter at the end wrecked me
    ? single-hop What part of the Russian novel moved Kemi most? = a
    """,
    """
    #q ruth: does anyone know a good bookshop for second hand sci fi
    ... 40
    #a jonah: late on this but for second hand sci fi: Hollow Tree Books by the canal, whole back room is paperbacks, 2 euros each
    ? single-hop Which shop did Jonah recommend for second hand sci-fi? = a
    ? single-hop How much are the paperbacks at the canal bookshop? = a
    """,
    """
    #q kemi: should we do an audiobook month? my commute is 2 hours now
    ... 30
    #a ines: kemi about the audiobook idea, i'm in if we pick one with a good narrator. the Project Hail Mary one is read by Ray Porter and it's incredible
    ? single-hop Which audiobook did Ines suggest for an audiobook month? = a
    ? single-hop Why does Kemi want an audiobook month? = q
    """,
    """
    #q lars: who has my copy of the Le Guin collection? i lent it to someone in january
    ... 45
    #a ruth: lars it's me, i have your Le Guin. sorry!! bringing it tuesday
    ? single-hop Who has Lars's Le Guin book? = a
    """,
    """
    #q ines: for the summer do we want to try a translated book? maybe something japanese
    jonah: yes
    ... 25
    #a lars: for the japanese summer read: Kitchen by Banana Yoshimoto. short, translated really well, and we can do food at the meeting
    ? single-hop What Japanese book did Lars suggest for summer? = a
    """,
]

TRIP = [
    """
    #q tariq: does anyone have a spare travel adapter? austria is the round two pin one right
    ... 30
    #a uma: tariq yes it's the round two pin, type F. i have two spares, i'll bring one for you
    ? single-hop What kind of plug does Austria use? = a
    """,
    """
    #q sofia: what's the weather going to be like? do i pack a real coat
    ... 30
    #a victor: sofia i checked the forecast, 4 to 9 degrees and rain on thursday. real coat, and an umbrella
    ? single-hop What weather is forecast for the Vienna trip? = a
    """,
    """
    #q sofia: are we flying or taking the night train to vienna
    tariq: train sounds romantic until you sleep in it
    ... 30
    #a uma: re flying vs train: i priced it. night train is 89 each with a couchette, flights are 140 with bags. train gets in at 7:50
    ... 15
    #b sofia: ok night train it is, booked 4 couchette spots
    ? single-hop How are we getting to Vienna? = a,b
    ? single-hop How much does the night train cost per person? = a
    """,
    """
    #q victor: where are we staying in vienna
    ... 35
    #a tariq: for the stay: found an apartment in the 7th district, Neubau, 2 bedrooms, 120 a night total, 5 minutes from the U3
    ? single-hop Which district is the Vienna apartment in? = a
    ? single-hop How much is the Vienna apartment a night? = a
    """,
    """
    #q uma: does anyone need to be back by a certain day
    ... 20
    #a victor: back to uma's question, i need to be home by sunday the 14th, my sister's birthday dinner
    ? temporal By when does Victor need to be back from the trip? = a
    """,
    """
    #q tariq: what do we want to do there besides eating cake
    sofia: eating more cake
    ... 30
    #a uma: for the plan: Belvedere for the Klimt on day one, then the Naschmarkt. day two the Prater and the big wheel
    #b victor: and i booked the opera standing tickets for the friday, 15 euros lol
    ? multi-hop What did we plan to do in Vienna? = a,b
    ? single-hop How much were the opera standing tickets? = b
    """,
    """
    #q sofia: who's in charge of money this time
    ... 40
    #a tariq: ok i'll do money. made a splitwise group called "vienna or bust", add everything there
    ? single-hop What is the Splitwise group for the trip called? = a
    ? single-hop Who is handling the trip money? = a
    """,
    """
    #q victor: is anyone's phone plan going to work there
    ... 25
    #a sofia: roaming is free in the EU now, victor, you're fine, just check your plan isn't a weird prepaid one
    ? single-hop What did Sofia say about Victor's phone plan abroad? = a
    """,
    """
    #q uma: is there a cake place we actually have to try or is that a myth
    ... 50
    #a tariq: uma re cake: Demel, not Sacher. everybody says so. the sachertorte there is better and the queue is shorter
    ? single-hop Which café did Tariq say has the better Sachertorte? = a
    """,
]

DRIFT = """
A: ok random thought but why do all new cars look the same
A: like a jelly bean with angry eyes
B: aerodynamics and regulations mostly
C: and everyone copying whatever sold last year

A: i finally started running again
A: 3k this morning, felt like dying but in a good way
B: proud of you
A: knees are filing a complaint though

A: does anyone else's kid refuse to eat anything green
B: mine eats peas but only frozen
B: like straight out of the freezer
A: that's terrifying

A: hey sorry i vanished, work fire drill
B: the real kind or the metaphor kind
A: both, somehow

A: i've been trying to get into tea instead of coffee
B: how's that going
A: i now drink both

A: i watched a documentary about lighthouse keepers last night
A: honestly it sounded like a dream job
B: until the storm comes
A: i'd be fine, i'd have books

A: question for the room, is a hot dog a sandwich
B: absolutely not
C: legally yes
A: chaos

A: my neighbour's parrot learned my name
A: it yells it every morning at 7
B: so you have an alarm now
A: a free one, technically

A: is anyone else finding it impossible to focus today
B: it's the full moon
C: it's the lack of sleep
A: it's both probably

A: made lasagne for the first time
A: it took 4 hours and 11 dishes
B: but was it good
A: it was incredible and i'll never do it again

A: my laptop fan sounds like a jet engine when i open a spreadsheet
B: time to clean it
A: or time to not open spreadsheets

A: the fog this morning was unreal
A: couldn't see the end of the street
B: creepy. very horror movie opening

A: we adopted a rescue dog!!
A: her name is Biscuit and she's afraid of the washing machine
B: BISCUIT
C: pics please

A: anyone tried those meal kit boxes
B: yeah for like a month
B: it was fine but so much packaging
A: that's what i was worried about

A: i keep forgetting to drink water
B: get a big bottle with the times on it
A: i have one, i forget to look at it

A: learning to knit and i've made what can only be described as a rectangle
B: a scarf!
A: for a mouse maybe

A: so my car got towed
A: apparently the sign was behind a tree
B: fight it, take pictures of the tree
A: already did, the tree looks very guilty

A: the new season of that baking show is out
B: no spoilers
A: i won't say who left
A: but it's a crime

A: thinking of repainting the living room
A: dark green? too much?
B: dark green is gorgeous
C: do a test patch first, looks different at night

A: do you ever just stand in the kitchen eating cheese from the fridge at midnight
B: every night
C: that's what it's for

A: finally fixed the dripping tap
A: it was a 50 cent washer
A: i've been listening to that drip for a year

A: my phone autocorrected "meeting" to "meowing" in an email to my boss
B: did they notice
A: they replied "meow"

A: ok weekend plans anyone
B: sleeping
C: the garden, if it stops raining
A: both sound great

A: is it me or are concerts so expensive now
B: it's not you
C: i paid 90 for a seat behind a pillar

A: i just learned that wombats have cube shaped poop
B: why would you tell me this
A: knowledge is for sharing

A: i need a new pillow recommendation
A: mine is basically a pancake
B: the buckwheat ones are weird but good
C: memory foam, never going back

A: got a letter from the council about my hedge
A: apparently it's "encroaching"
B: hedge crimes
A: it's been there longer than the council

A: the kids built a fort in the living room
A: it's been 3 days, it's load bearing now
B: it lives there now

A: my grandad just learned to video call
A: we spent 10 minutes looking at his ceiling
B: classic
A: best call of the week honestly

A: what's the move for a rainy sunday
B: soup and a long movie
C: museum
A: soup it is

A: so i tried cold showers for a week
B: and?
A: i'm cold

A: bought a plant for the office and named it Gerald
B: Gerald will outlive us all

A: my sleep tracker says i slept 4 hours
A: i feel like i slept 2
B: trust your body not the watch

A: why is every podcast 3 hours now
B: they're paid by the minute
C: 1.5x speed is the only way

A: internet is crawling tonight
B: same, the whole street probably
A: everyone streaming the match
"""


def _discord_chatter() -> str:
    path = Path(__file__).resolve().parents[1] / "discord" / "build.py"
    spec = importlib.util.spec_from_file_location("discord_fixture", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.CHATTER)


def channels() -> list[Channel]:
    start = datetime(2024, 2, 10, 19, 0)
    settings = {"chatter_rate": 0.8, "concurrent": 3, "break_rate": 0.004, "burst_on": 0.5}
    return [
        Channel("homelab", ["alex", "bea", "chen", "dmitri"], [parse_snippet(s) for s in HOMELAB], start,
                **settings),
        Channel("bookclub", ["ines", "jonah", "kemi", "lars", "ruth"], [parse_snippet(s) for s in BOOKCLUB],
                start.replace(hour=20), **settings),
        Channel("trip", ["sofia", "tariq", "uma", "victor"], [parse_snippet(s) for s in TRIP],
                start.replace(day=12, hour=18), **settings),
    ]


def build(directory: Path) -> None:
    """Write messages.jsonl and queries.jsonl into ``directory``."""
    rng = random.Random(SEED)
    chatter = parse_chatter(DRIFT) + parse_chatter(_discord_chatter())
    queries: list[dict[str, object]] = []
    built = channels()
    for channel in built:
        compose(channel, chatter, rng, queries, chatter_after=rng.randint(150, 220))
    write(directory, built, queries)


def main() -> None:
    build(Path(__file__).resolve().parent)


if __name__ == "__main__":
    main()
