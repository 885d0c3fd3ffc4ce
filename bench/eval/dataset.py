"""A retrieval evaluation set: personas who mention facts across many sessions, and
questions about them, paraphrased so that keywords alone often miss the answer.

Each fact has one or two answer turns (a statement, sometimes a detail added later),
one question that shares words with them and two that do not. Personas are kept apart
by characterId, so each question has exactly its own answers in its persona's history.
"""

import random

# (fact id, [answer turns with {x} for the persona's value], [questions], values per persona)
FACTS = [
    (
        "pet",
        [
            "I adopted a {x} last spring and it sleeps on my bed.",
            "The {x} knocked my coffee off the desk again today.",
        ],
        [
            "Tell me about my {x}.",
            "What animal lives with me?",
            "Do I have any companions at home with fur or feathers?",
        ],
        ["grey cat called Miso", "beagle called Rex", "parrot called Kiwi", "rabbit called Mochi"],
    ),
    (
        "job",
        ["I work as a {x} and the shifts are exhausting."],
        [
            "How are my {x} shifts going?",
            "What do I do for a living?",
            "Which profession did I mention?",
        ],
        ["night nurse", "bus driver", "pastry chef", "firefighter"],
    ),
    (
        "sibling",
        ["My sister lives in {x} now.", "I visited my sister in {x} over the holidays."],
        [
            "Who do I know in {x}?",
            "Where does my sibling live?",
            "Which city is my family member based in?",
        ],
        ["Lisbon", "Osaka", "Toronto", "Nairobi"],
    ),
    (
        "instrument",
        ["I have been practising the {x} every evening."],
        [
            "How is my {x} practice?",
            "Which musical instrument am I learning?",
            "What do I play in the evenings?",
        ],
        ["violin", "cello", "trumpet", "harp"],
    ),
    (
        "allergy",
        ["I am allergic to {x}, so please never suggest recipes with them."],
        [
            "Which recipes contain {x}?",
            "What food makes me ill?",
            "Is there anything I cannot eat for medical reasons?",
        ],
        ["peanuts", "shellfish", "strawberries", "sesame seeds"],
    ),
    (
        "car",
        [
            "My {x} broke down on the motorway yesterday.",
            "The mechanic says the {x} needs a new gearbox.",
        ],
        [
            "What happened to my {x}?",
            "Which vehicle do I drive?",
            "What trouble did I have on the road?",
        ],
        ["old red Volvo", "blue Fiat Panda", "white camper van", "green Honda Civic"],
    ),
    (
        "sport",
        ["I joined a {x} club that meets on Sundays."],
        [
            "When does my {x} club meet?",
            "What sport do I do at the weekend?",
            "How do I keep fit on Sundays?",
        ],
        ["rowing", "climbing", "fencing", "badminton"],
    ),
    (
        "birthday",
        ["My birthday is on {x}, please remind me to book a table."],
        [
            "What happens on {x}?",
            "When was I born?",
            "Which date should you remind me about for a celebration?",
        ],
        [
            "the ninth of March",
            "the second of July",
            "the thirtieth of October",
            "the fifth of January",
        ],
    ),
    (
        "language",
        ["I started learning {x} with an app on my phone."],
        [
            "How is my {x} going?",
            "Which foreign language am I studying?",
            "What am I trying to learn to speak?",
        ],
        ["Portuguese", "Korean", "Finnish", "Swahili"],
    ),
    (
        "food",
        ["My favourite dish is {x}, I could eat it every day."],
        [
            "Do I like {x}?",
            "What meal do I love most?",
            "If you cooked for me, what would make me happiest?",
        ],
        ["ramen with an extra egg", "mushroom risotto", "fish tacos", "lentil curry"],
    ),
    (
        "fear",
        ["I am terrified of {x} since I was a child."],
        ["Why do I avoid {x}?", "What scares me?", "Is there something that gives me anxiety?"],
        ["deep water", "spiders", "thunderstorms", "tall bridges"],
    ),
    (
        "book",
        ["I am reading {x} at the moment and love it."],
        [
            "What do I think of {x}?",
            "Which novel am I in the middle of?",
            "What have I been reading before bed?",
        ],
        ["The Left Hand of Darkness", "Pride and Prejudice", "Norwegian Wood", "Dune"],
    ),
    (
        "garden",
        [
            "I planted {x} on the balcony this year.",
            "The {x} on my balcony finally started growing.",
        ],
        ["How are the {x} doing?", "What am I growing at home?", "What plants did I put outside?"],
        ["tomatoes and basil", "chillies", "sunflowers", "lavender"],
    ),
    (
        "move",
        ["We are moving to a flat in {x} next month."],
        [
            "When is the move to {x}?",
            "Where will my new home be?",
            "Which neighbourhood am I relocating to?",
        ],
        ["Hackney", "Shimokitazawa", "Kreuzberg", "Brooklyn"],
    ),
    (
        "coffee",
        ["I drink my coffee {x}, nothing else."],
        [
            "How do I take my coffee?",
            "What is my usual morning drink order?",
            "How should you prepare my espresso-based beverage?",
        ],
        ["black with no sugar", "with oat milk", "with two sugars", "as a flat white"],
    ),
    (
        "hobby",
        ["On weekends I go {x} whenever the weather allows."],
        [
            "Where do I go {x}?",
            "What do I do outdoors on days off?",
            "How do I spend a sunny Saturday?",
        ],
        ["birdwatching", "sea kayaking", "geocaching", "trail running"],
    ),
    (
        "medicine",
        ["I take {x} every morning for my blood pressure."],
        [
            "When do I take {x}?",
            "What medication am I on?",
            "Which pills do I need daily for my heart?",
        ],
        ["amlodipine", "lisinopril", "losartan", "ramipril"],
    ),
    (
        "partner",
        ["My partner {x} is a software engineer."],
        [
            "What does {x} do?",
            "Who am I in a relationship with?",
            "What is the name of my significant other?",
        ],
        ["Sam", "Yuki", "Priya", "Jonas"],
    ),
    (
        "school",
        ["I studied {x} at university."],
        ["Did I study {x}?", "What was my degree in?", "Which subject did I major in?"],
        ["marine biology", "architecture", "philosophy", "mechanical engineering"],
    ),
    (
        "travel",
        ["Next summer we are travelling to {x}.", "I booked the flights to {x} this morning."],
        [
            "When do we go to {x}?",
            "Where is my next holiday?",
            "Which country are we visiting for vacation?",
        ],
        ["Iceland", "Vietnam", "Peru", "Morocco"],
    ),
]

FILLER = [
    "Good morning! How are you today?",
    "That sounds lovely, tell me more.",
    "I am a bit tired tonight.",
    "Can you recommend a good film for the evening?",
    "The weather was strange this week.",
    "I had a long day at work.",
    "Thanks, that helps a lot.",
    "Let us talk about something else.",
    "What should I cook for dinner tonight?",
    "I could not sleep well last night.",
    "Do you remember what we talked about?",
    "I went for a short walk after lunch.",
    "Remind me to call the bank tomorrow.",
    "My phone battery keeps dying.",
    "I need a holiday.",
    "That is a funny story!",
    "I watched a documentary about whales.",
    "The train was late again.",
    "I am thinking of repainting the kitchen.",
    "Can you help me write an email?",
]
ASSISTANT = [
    "That is good to know, I will remember it.",
    "Thanks for telling me!",
    "I see, that sounds important.",
    "Noted. Is there anything else on your mind?",
    "How lovely! How do you feel about it?",
]
PERSONAS = ["ana", "ben", "chloe", "dev"]


def build(seed: int = 1) -> tuple[list[dict], list[dict]]:
    """(sessions for importSessions, questions [{persona, question, kind, answers}]).

    Answers are named by (session index, message index); the importer assigns ids."""
    rng = random.Random(seed)
    sessions, questions = [], []
    for p, persona in enumerate(PERSONAS):
        facts = list(FACTS)
        rng.shuffle(facts)
        # Each persona talks over 10 sessions; facts land in random sessions and turns.
        persona_sessions = [[] for _ in range(10)]
        placements = []
        for fact_id, answers, asks, values in facts:
            value = values[p]
            for n, answer in enumerate(answers):
                slot = rng.randrange(10)
                persona_sessions[slot].append(("fact", fact_id, n, answer.format(x=value)))
            placements.append((fact_id, [q.format(x=value) for q in asks]))
        for turns in persona_sessions:
            turns += [("filler", None, None, rng.choice(FILLER)) for _ in range(rng.randint(8, 14))]
            rng.shuffle(turns)
        answer_at: dict[str, list[tuple[int, int]]] = {}
        for turns in persona_sessions:
            messages = []
            for kind, fact_id, _, text in turns:
                if kind == "fact":
                    answer_at.setdefault(fact_id, []).append((len(sessions), len(messages)))
                messages.append({"role": "user", "content": text})
                messages.append({"role": "assistant", "content": rng.choice(ASSISTANT)})
            sessions.append({"meta": {"title": f"{persona} chat", "characterId": persona},
                             "messages": messages})  # fmt: skip
        for fact_id, asks in placements:
            for kind, question in zip(("keyword", "paraphrase", "paraphrase"), asks, strict=True):
                questions.append({"persona": persona, "question": question, "kind": kind,
                                  "answers": answer_at[fact_id]})  # fmt: skip
    return sessions, questions
