"""A harder retrieval evaluation set: long, dated, multi-session conversations between two
named people (LoCoMo-style), with questions whose answers are a few turns among thousands.

Design:
- Six conversations, each between a user and a persistent companion character (both with
  lives of their own). Each has 22-30 sessions of 18-40 turns, days to weeks apart over
  6-10 months; one conversation is one characterId ("conv-01" ...), which scopes questions.
- Most turns are small talk built from templates x slot fillers, deliberately sprinkled
  with words the facts also use (dog, trip, work, sister, flat, class, a city name) so that
  keyword search meets distractors.
- Facts are life events written in a small text format (FACTS below): each fact has
  beats, each beat a few turns placed in one session, beats in increasing sessions (so
  later turns refer back, and facts can change over time). Turns that state something a
  question needs carry a key; questions name the keys that answer them. Once a fact is
  told, its names also come up in passing in later small talk ("Biscuit says hello"),
  never stating what a question asks, so a name alone does not find the answer.
- Question kinds: "single-hop" (one turn; style "named" shares the turn's names,
  "paraphrase" does not), "multi-hop" (turns from two sessions), "temporal" (when / in
  which month; the date is the answer turn's session createdAt) and "open-domain" (an
  inference from a turn). Questions also carry "style" ("named", "paraphrase" or "-").

Everything comes from one random.Random(seed), so a seed always gives the same set.
"""

import random
from datetime import UTC, datetime, timedelta

# (user, companion character) of each conversation
PAIRS = [
    ("Maya", "Tom"),
    ("Priya", "Daniel"),
    ("Sofia", "Marcus"),
    ("Hannah", "Leo"),
    ("Aisha", "Ben"),
    ("Chloe", "Sam"),
]
FACTS_PER_CONVERSATION = 13
MAX_TURNS = 40  # per session
MENTION = 0.25  # chance that a small-talk opener mentions an earlier fact's names in passing
MONTHS = "January February March April May June July August September October November December"


def _lines(text: str) -> list[str]:
    """Templates written one a line."""
    return text.strip().split("\n")


def _table(text: dict[str, str]) -> dict[str, list[str]]:
    """Value lists written compactly as "a|b|c"."""
    return {name: values.split("|") for name, values in text.items()}


# Values for fact slots; "a; b; c" fills slot, slot_1 and slot_2 together.
POOLS = _table(
    {
        "breed": "beagle|cocker spaniel|whippet|border collie|dachshund|greyhound|schnauzer|corgi",
        "pet": "Biscuit|Pickle|Rolo|Bramble|Pepper|Noodle|Waffle|Juniper|Custard|Pretzel",
        "weekday": "Saturday|Sunday|Friday|Monday|Wednesday",
        "chewed": "my new trainers|the TV remote|my glasses case|a sofa cushion|my passport|"
        "the skirting board|my headphones",
        "ailment": "an ear infection|a grass seed stuck in his paw|a dodgy tummy|a sprained leg|"
        "a swallowed sock",
        "cost": "£180|£240|£95|£310|£425|£150|£275",
        "company": "Halden & Rowe|Brightwater Foods|Kestrel Analytics|Northgate Bank|Pell Studio|"
        "Orbis Logistics|Marlow Press|Fenwick Dental|Copperleaf|Tidewell Energy|Ashby Games|"
        "Quill Insurance",
        "role": "project manager|data analyst|graphic designer|account manager|junior architect|"
        "sous chef|UX researcher|payroll officer|copywriter|lab technician",
        "boss": "Gemma|Rashid|Colin|Ines|Malcolm|Tanya|Viktor|Bronwen|Declan|Yusra",
        "salary": "£38,500|£42,000|£47,250|£51,000|£36,800|£44,600",
        "nth": "3rd|10th|17th|24th|1st|14th",
        "town": "Leeds|Bristol|Sheffield|Brighton|Glasgow|Norwich|Cardiff|York|Nottingham|Bath|"
        "Exeter|Manchester",
        "street": "Gloucester Road|Cotham Hill|Ivy Terrace|Mill Lane|Albion Street|Hope Street|"
        "Redland Grove|Chapel Walk|Rua Augusta Close|Kingsdown Parade",
        "abroad": "Lisbon|Kyoto|Naples|Reykjavik|Split|Marrakesh|Porto|Seville|Budapest|"
        "Copenhagen|Vienna|Ljubljana",
        "nights": "four|five|six|seven|ten",
        "flights": "£240|£310|£189|£425|£560|£275",
        "room": "214|308|1107|42|515|726|903",
        "landmark": "the cathedral|the old harbour|the castle on the hill|the main square|"
        "the river|the lighthouse",
        "highlight": "a tiny bar where the owner played guitar|the food market on the Saturday|"
        "a boat ride at sunset|getting lost in the back streets|the cable car up the hill|"
        "a cookery class with a grandmother",
        "lost": "phone charger|favourite jumper|sunglasses|e-reader|hairdryer|retainer",
        "sib": "Jess|Olivia|Rachel|Nadia|Kirsty|Ellie|Fern|Zara",
        "fiance": "Owen|Callum|Dev|Luca|Ahmed|Rory|Ethan|Joel",
        "proposal": "the top of Arthur's Seat|a beach in Cornwall|the London Eye|their favourite pub|"
        "a Christmas market|the end of a ferry pier",
        "venue": "a barn near Hexham|Ashcombe Manor|a vineyard in Sussex|"
        "the old boathouse at Windermere|a hotel in the Cotswolds|a castle in Fife",
        "guests": "80|120|60|150|95|40",
        "race": "Bristol Half|Great North Run|Cardiff Half|Bath Half|Hackney Half|Manchester Half",
        "racetime": "1:52:10|2:04:33|1:47:58|2:11:02|1:58:45",
        "km": "14|16|18|19|21",
        "weeks": "ten|twelve|fourteen|sixteen",
        "road": "the canal towpath|Blackhorse Hill|the ring road|a cobbled lane by the market|"
        "the roundabout by the station",
        "bone": "wrist|forearm|elbow|thumb|collarbone",
        "craft": "pottery; a lopsided mug; a set of glazes|life drawing; a charcoal sketch of a hand; "
        "a box of willow charcoal|woodwork; a little oak stool; a good chisel set|"
        "jewellery making; a silver ring; a ring mandrel|watercolour; a painting of the harbour; "
        "a travel paint set|bookbinding; a linen notebook; a bone folder",
        "studio": "Clay Corner|the Old Fire Station|Birch Lane Studio|the community centre|"
        "Makers' Yard|Hatch Arts",
        "friend": "Lauren|Grace|Bea|Morag|Hattie|Lena|Caitlin|Imogen|Tasha|Noor",
        "catbreed": "Maine Coon|Siamese cat|ragdoll|Bengal cat|big ginger tom|Persian cat",
        "cuisine": "Italian; the cacio e pepe|Georgian; the khachapuri|Sichuan; the dan dan noodles|"
        "Lebanese; the lamb shawarma|Peruvian; the ceviche|Korean; the fried chicken|"
        "Ethiopian; the injera platter|Mexican; the birria tacos",
        "rname": "Marlowe's|The Copper Pot|Lantern|Figtree|Bluebell|Salt & Ember|Oriel|Kettle Yard",
        "item": "road bike|espresso machine|second-hand piano|corner sofa|laptop|sewing machine|"
        "telescope|kayak",
        "price": "£1,200|£850|£2,300|£640|£1,750|£3,100",
        "trail": "Striding Edge|Kinder Scout|Catbells|the Pen y Fan horseshoe|the Tryfan ridge|"
        "Helvellyn",
        "age": "60|65|70|75|80",
        "party": "the cricket club|her favourite pub|our old church hall|a boat on the river|"
        "the Italian place in town",
        "gift": "photo album|garden bench|framed map of where she grew up|quilt we all sewed",
        "car": "Skoda Fabia|Ford Fiesta|Toyota Yaris|VW Polo|Mini Cooper|Honda Jazz",
        "miles": "68,000|92,000|41,000|110,000|57,000",
        "fault": "Worn brake discs|A cracked exhaust|Bald tyres|A dodgy suspension spring",
        "baby": "Iris|Mabel|Ada|Freya|Rosa|Isla",
        "weight": "7lb 2oz|8lb 4oz|6lb 11oz|7lb 9oz",
        "lang": "Portuguese|Japanese|Italian|Greek|Spanish|Dutch",
        "tutor": "Beatriz|Kenji|Paola|Nikos|Lucía|Femke",
    }
)

# One text block per fact: a line of slots ("pool" or "slot=pool"), then turns
# ("A key | text | alternative ...", A = the fact's owner, B = the other person, key
# optional), "--" between beats (one session each), and questions
# ("? kind style [keys] text", {m_key} = month of the session holding that key) and
# passing mentions for later small talk ("~ text | alternative").
FACTS = {
    "dog": """breed pet weekday chewed ailment cost
A got | Guess what, we finally picked up the puppy on {weekday}! | Big news: as of {weekday} there is a puppy living in my house.
B | No way! What did you end up getting? | Stop it. What kind?
A name | A little {breed}, all ears and paws. We've called him {pet}, best dog ever. | {breed}, ten weeks old, answers to {pet}. Softest dog in the world.
--
A chew | {pet} chewed {chewed} to bits last night, I could cry. | Woke up to find {pet} had eaten {chewed}. Brilliant.
B | He's a menace. | That's what you get for leaving it on the floor.
--
A vet | Had to take {pet} to the vet, {ailment}. {cost} later he's fine. | Vet with {pet} this morning: {ailment}. {cost}, can you believe it.
~ {pet} says hello, he's asleep upside down on the sofa.
~ {pet} hates the vet, he hides under the table when he sees the car keys. | Took {pet} to the park, he tried to make friends with a swan.
? single-hop named [name] What did {A} name the {breed}?
? single-hop paraphrase [name] What breed of dog does {A} own?
? multi-hop - [name,chew] What did {A}'s {breed} destroy?
? temporal - [got] When did {A} bring the new puppy home?
? single-hop named [vet] How much did the vet charge {A} for {pet}?
? open-domain - [got,name] Would {A} need a dog sitter when going away?""",
    "job": """old=company new=company role boss salary nth
A quit | So I handed in my notice at {old} today. | It's done, I've resigned from {old}. Four years!
B | Finally! Where are you off to? | Whoa. Do you have something lined up?
A new | {new}, as a {role}. New job starts on the {nth}. | I got the {role} job at {new}! Starting on the {nth}.
--
B | How's the new place treating you? | So? First week?
A boss | Good, I think. My manager at {new}, {boss}, is sharp and a bit intense. | Busy. {boss}, my manager at {new}, already has me running a project.
--
A raise | Had my six-month review, got a pay rise: {boss} is putting me up to {salary}! | Pay rise! {salary} from next month, {boss} fought for it.
~ Our manager at {new} wants everyone in on Fridays now. | Everyone at {new} is off sick, it's just me and the printer.
~ {boss} is on holiday this week, bliss.
? single-hop named [boss] Who is {A}'s manager at {new}?
? single-hop paraphrase [new] What job does {A} do now?
? temporal - [quit] When did {A} quit {old}?
? multi-hop - [boss,raise] Which company does the manager who gave {A} a pay rise work for?
? single-hop named [raise] What pay rise did {boss} give {A}?""",
    "move": """city1=town city2=town street nth
A home | It has rained for nine days straight here in {city1}, I'm growing moss. | Sunny in {city1} for once, the whole street is out on the pavement.
--
A move | Big news: we've signed for a flat on {street} in {city2}. Keys on the {nth}. | Leaving {city1}! Got the flat on {street}, in {city2}, moving on the {nth}.
B | That's huge. You'll love it. | About time. Send photos of the new place.
--
A settled | Still living out of boxes, but the neighbours brought round a lemon cake. | Still unpacking. The neighbours downstairs brought us a lemon cake, how nice is that.
~ The flat in {city2} is so much warmer than my old place.
~ Found a decent coffee place round the corner from {street}. | {city2} has better bakeries than {city1}, sorry {city1}.
? single-hop named [move] Which street is {A}'s flat in {city2} on?
? temporal - [home] Where was {A} living in {m_home}?
? temporal - [move] When did {A} move to {city2}?
? multi-hop - [move,settled] What did {A}'s new neighbours in {city2} bring round?
? single-hop paraphrase [move] Which town did {A} relocate to?""",
    "trip": """city=abroad nights flights room landmark highlight lost
A book | Booked it! {nights} nights in {city}, flights were only {flights}. | Flights to {city} are booked, {flights} return, {nights} nights.
--
A hotel | Made it to {city}! Room {room}, and you can see {landmark} from the bed. | Checked in, room {room}. {city} is gorgeous, {landmark} is right outside.
B | Jealous. Eat something amazing for me. | Send pictures!
--
A back | Back from {city}. Best bit was {highlight}. | Home again. Honestly {city} was worth it just for {highlight}.
B | Anything go wrong? | Sounds dreamy. Any disasters?
A lost | Only that I left my {lost} in the hotel. Gone forever. | I left my {lost} behind in the hotel room, classic me.
~ Still looking at my {city} photos, I want to go back. | Someone at work just booked {city} too, I've told them which hotel.
? single-hop named [hotel] What room was {A} in at the hotel in {city}?
? single-hop paraphrase [back] What was the highlight of {A}'s holiday abroad?
? temporal - [hotel] When did {A} travel to {city}?
? multi-hop - [book,lost] How much were the flights for the trip where {A} lost the {lost}?
? single-hop paraphrase [lost] What did {A} leave behind at the hotel?""",
    "wedding": """sib fiance proposal venue guests
A engaged | My sister {sib} got engaged! {fiance} proposed at {proposal}. | {fiance} finally proposed to my sister {sib}, at {proposal} of all places.
B | Aww! Tell her congratulations from me. | About time, they've been together forever.
--
A speech | {sib} asked me to give a speech at the wedding and I genuinely feel sick about it. | I have to stand up and talk in front of everyone at the wedding. I'd rather eat glass.
--
A wedding | The wedding was perfect. {venue}, {guests} guests, and {sib} cried through the vows. | We did it, my sister is married! All {guests} guests made it to {venue}, it looked unreal.
~ {sib} keeps sending me screenshots of cake toppers. | {fiance} and {sib} came round for dinner, he brought terrible wine.
? single-hop named [engaged] Who proposed to {sib}?
? single-hop paraphrase [engaged] Who is {A}'s sister going to marry?
? temporal - [wedding] When did {sib} get married?
? multi-hop - [engaged,wedding] Where did {fiance} get married?
? open-domain - [speech] Would {A} enjoy giving a speech?
? single-hop named [wedding] How many guests came to {sib}'s wedding?""",
    "race": """race racetime km weeks
A signup | I've signed up for the {race}. {weeks} weeks to train, what have I done. | Entered the {race}! First proper race, {weeks} weeks from now.
--
A train | Did {km} km before work this morning. Legs are jelly. | Long run today, {km} km, and I only stopped once for a cry.
--
A result | Finished the {race} in {racetime}! Didn't walk once. | {racetime}!!! I ran the whole {race} without stopping.
B | You absolute legend. | I'm so proud of you. Medal photo please.
~ My running watch says I've done 200 km this year. | Thinking about the {race} crowd still gives me goosebumps.
? single-hop named [result] What was {A}'s time in the {race}?
? temporal - [result] When did {A} run the {race}?
? single-hop paraphrase [train] How far did {A} go on the longest training outing?
? open-domain - [signup,result] Is {A} into endurance sport?
? multi-hop - [signup,result] How many weeks of preparation did {A} have before finishing in {racetime}?""",
    "injury": """road bone
A broke | So I came off my bike on {road} and broke my {bone}. | Slight problem: I fell off the bike on {road}. My {bone} is broken.
B | Oh no! Are you okay? | What?! How long are you out for?
A cast | Six weeks in a cast. Typing this one-handed. | Cast for six weeks, so I'm useless.
--
A off | Cast came off today! My {bone} looks tiny and pale. | Free at last, the cast is off. It smells awful.
~ My {bone} aches when it rains now. | Back on the bike next week, fingers crossed.
? single-hop named [broke] What did {A} break on {road}?
? single-hop paraphrase [broke] What injury did {A} suffer?
? temporal - [off] When did {A} get the cast taken off?
? open-domain - [broke] Does {A} ride a bike to get around?""",
    "hobby": """craft studio
A start | I've signed up for {craft} classes at {studio}, Thursdays after work. | Starting {craft} at {studio} this week, every Thursday. Wish me luck.
--
A made | Look what I made at class: {craft_1}! It's not straight but it's mine. | Brought home {craft_1} from class tonight. Proud doesn't cover it.
~ Someone at {studio} brought homemade brownies tonight. | I've been watching {craft} videos at 2am, send help.
? single-hop named [start] Where does {A} go for {craft} lessons?
? temporal - [start] What class did {A} sign up for in {m_start}?
? multi-hop - [start,made] What did {A} make at {studio}?
? open-domain - [start] Would {craft_2} be a good present for {A}?""",
    "cats": """friend catbreed
A sneeze | Went round to {friend}'s and her {catbreed} sat on my lap all night. Eyes streaming, sneezed till midnight. | Never again. {friend}'s {catbreed} followed me everywhere and my face puffed up like a balloon.
B | Poor you. Antihistamines next time. | Oh no, that sounds horrible.
? open-domain - [sneeze] Is {A} likely allergic to cats?
? single-hop named [sneeze] What kind of cat does {friend} have?""",
    "restaurant": """cuisine rname street person=friend
A found | We found this {cuisine} place on {street}, {rname}. I had {cuisine_1} and I'm still dreaming about it. | Have you been to {rname}? {cuisine} place on {street}. I'm obsessed with {cuisine_1}.
--
A birthday | Took {person} to {rname} for her birthday, she loved it. | Booked {rname} for {person}'s birthday, it was a hit.
~ I'm craving {cuisine} food again, it's becoming a problem.
~ Walked past {rname} on {street} and nearly went in again. | {person} wants to go back to {rname} already.
? single-hop named [found] What's the name of that {cuisine} place {A} likes?
? single-hop paraphrase [found] Which dish did {A} love at that new place?
? multi-hop - [found,birthday] Which street is the restaurant where {A} celebrated {person}'s birthday on?
? temporal - [birthday] When did {A} take {person} out for a birthday meal?""",
    "purchase": """item price
A bought | I did it, I bought the {item}. {price}. Don't tell my mum. | The {item} is mine! {price}, which I'm choosing not to think about.
--
A use | Used the {item} every single day this week, best money I've ever spent. | Honestly the {item} has changed my life, zero regrets.
~ Still can't believe I own a {item}. | Showed {B} the {item} on video call, remember?
? single-hop named [bought] How much did {A} pay for the {item}?
? single-hop paraphrase [bought] What big purchase did {A} make?
? temporal - [bought] When did {A} buy the {item}?
? open-domain - [use] Does {A} regret buying the {item}?""",
    "hills": """trail
A walk | Did {trail} again on Sunday. Nothing clears my head like being up high with the wind in my face. | Six hours on {trail} yesterday, boots soaked, happiest I've been all month.
? open-domain - [walk] Would {A} enjoy a hiking holiday?
? single-hop paraphrase [walk] Which mountain route does {A} like?""",
    "veg": """
A veg | Three months without meat now and I don't even miss bacon. | I've properly stopped eating meat. Made a mushroom stroganoff tonight and didn't miss a thing.
B | Good for you. | Respect. I couldn't do it.
? open-domain - [veg] Would {A} order a bacon sandwich?
? single-hop paraphrase [veg] Is {A} vegetarian?""",
    "mum": """age party gift
A party | Mum turns {age} next week. We're throwing a surprise party at {party}. | Planning a surprise do for Mum's {age}th at {party}, she has no idea.
--
A after | Mum's party was chaos in the best way. She cried when she saw the {gift}. | Mum still hasn't stopped talking about the party. The {gift} was a hit.
~ Mum rang for an hour about the neighbours. | Mum wants to learn to text with emojis now.
? single-hop named [party] How old did {A}'s mum turn?
? single-hop named [party] Where was the surprise party for {A}'s mum?
? multi-hop - [party,after] What present did {A}'s mum get at {party}?
? single-hop paraphrase [after] What present did {A}'s mum love?""",
    "car": """car miles fault
A car | Bought a second-hand {car}, {miles} miles on the clock but it drives like a dream. | Meet my new old {car}. {miles} miles, one careful owner, allegedly.
--
A mot | The {car} failed its MOT. {fault}. Of course. | Garage rang. {fault}, so the {car} is off the road for a week.
~ The {car} needs a wash, it's more mud than car. | Gave my brother a lift in the {car}, he hated my music.
? single-hop paraphrase [car] What does {A} drive?
? single-hop named [car] How many miles were on {A}'s {car} when bought?
? temporal - [mot] When did {A}'s {car} fail the MOT?
? multi-hop - [car,mot] What went wrong with the vehicle {A} bought with {miles} miles on it?""",
    "baby": """friend baby weight
A born | {friend} had the baby! A girl, {baby}, {weight}. | Baby news: {friend}'s little girl arrived, {weight}, called {baby}.
B | Congratulations to her! Lovely name. | Aww. Is everyone okay?
--
A visit | Went to meet {baby} today. Tiny fingers, furious face, completely perfect. | Held {baby} for an hour, she fell asleep on me.
~ {friend} sent a video of {baby} sneezing, I can't cope. | {baby} has a proper laugh now.
? single-hop named [born] What did {friend} name her baby?
? temporal - [born] When was {friend}'s daughter born?
? multi-hop - [born,visit] Whose baby did {A} go to meet?""",
    "lang": """lang tutor
A lesson | Started {lang} lessons with a tutor called {tutor}, twice a week. | I've got a {lang} tutor now, {tutor}, Tuesdays and Fridays.
--
A chat | Had my first whole conversation in {lang} today! Ordered coffee and everything. | {tutor} says my {lang} accent is getting less tragic.
~ {tutor} gave me so much homework this week. | Watched a film in {lang} with subtitles, understood about four words.
? single-hop paraphrase [lesson] Which language is {A} taking lessons in?
? single-hop named [lesson] Who teaches {A} {lang}?
? temporal - [lesson] When did {A} start learning {lang}?""",
    "swim": """
A swim | Confession: I never learnt to swim. Even the shallow end makes my heart race. | I stood at the edge of the pool for twenty minutes today and couldn't get in. Water and me don't mix.
B | That's okay, lots of people can't. | You could take lessons, no shame in it.
? open-domain - [swim] Would {A} enjoy a snorkelling trip?""",
}

# Small talk: an opener body (optionally behind a prefix), a reply, sometimes a follow-up.
PREFIXES = ["", "", "", "Honestly, ", "Ugh, ", "Anyway, ", "So ", "Random thought: ", "{B}, "]
OPENERS = _lines("""the weather has been {weather} all week.
I'm making {food} tonight, want the recipe?
just finished {show}, the ending was {verdict}.
work was {workday} today.
my sister sent me forty memes before breakfast.
the dog next door barked from six until seven this morning.
{friend} wants to do {activity} on {weekday}, are you in?
I need a new {thing}, mine is falling apart.
thinking of a little trip somewhere, maybe {city}, maybe just the sofa.
did you see the {sport} last night?
I slept {sleep} last night.
the train was {late} again this morning.
I've been craving {food} all day.
I keep meaning to ring {relative}, I'll do it tomorrow.
the flat is freezing, I'm wearing two jumpers.
there's a new {cuisine} place opening near the station.
my manager booked a meeting for five to five on a Friday.
it's {weekday} already, how did that happen.
I went for a run round the park. Well, a jog. Well, a walk.
I bought {plant} for the windowsill, give it a week.
{friend} got a new job apparently, haven't heard the details.
my hotel points expired before I used them, typical.
I saw a wedding party outside the church on the way home.
the gym was rammed tonight.
I've got {chore} to do and zero motivation.
the car park at the supermarket is a war zone.
there was a fox in the garden at midnight, screaming.
can you recommend a {genre} book?
I spilled coffee on my {clothing} before a meeting.
the heating's broken again, landlord says {weekday}.
half the office is off sick.
I started watching {show} because you wouldn't stop going on about it.
{friend} keeps talking about moving to {city}.
I found an old photo of us at {place}.
my neighbour's cat has moved into our garden.
the class I wanted to try is full until next term.
the bike shop on the corner closed down.
{relative} is coming to stay for the weekend, pray for me.
I ate a whole {snack} in one sitting.
I've been humming {song} all day.
the trip to the tip took two hours, don't ask.
my sister's dog barks at every single leaf.
what are you having for dinner?
I can't decide between {food} and {cuisine} food tonight.
{friend} says hi, by the way.
I've had three coffees and it's not even ten.
I tidied my desk at work, it won't last.
my brother is convinced he can cook {food} better than me.""")
REPLIES = _lines("""Ha, classic.
Oh no. That sounds {feeling}.
Same here, honestly.
You deserve a {treat} after that.
I'd pay money to see that.
Tell me more.
Please tell me you took a photo.
I'm in, as long as it's not too early.
Not again!
You always say that, {B}.
Ugh, I feel that in my bones.
Honestly, {weekday}s are the worst.
Did you at least get a coffee out of it?
Bold move. I respect it.
Send me the link.
Fair enough.
That's the most you thing I've ever heard.
We should do {activity} soon.
I was just thinking about {food}, weirdly.
Go to bed early tonight, promise?
Oh, I love that for you.
Sounds like a {feeling} kind of day.
You're a better person than me.
Okay but how's everything else?
Noted, adding it to the list.
Treat yourself.
Wait, what happened?
I would have done exactly the same.
Ha! Poor thing.
Give it a week and you'll have forgotten.
Now I want {food} too.
That's very {feeling}.
Typical {weekday}.""")
SMALL = _table(
    {
        "greeting": "Morning!|Hey you.|Evening, {B}.|Hiya!|You about?|Hello hello.|Ugh, what a day.|Hi {B}!",
        "prompt": "Anyway, what's new with you?|How's your week been?|Any news?|"
        "Go on then, what's happening with you?|How are things?|What have you been up to?",
        "followup": "Ha, exactly.|I know, right?|Honestly.|Right?!|Story of my life.|"
        "I'll let you know how it goes.|Anyway.|We'll see.",
        "weather": "grey|miserable|weirdly warm|so windy|drizzly|freezing|gorgeous|muggy",
        "food": "lasagne|a curry|stir fry|pancakes|soup|fish pie|tacos|shakshuka|a roast|"
        "cheese on toast|dumplings|chilli",
        "show": "that baking show|the detective series|the new sci-fi thing|the dating show|"
        "that octopus documentary|the Danish crime drama|the quiz show",
        "verdict": "ridiculous|perfect|so rushed|devastating|a bit of a let-down|confusing",
        "workday": "endless|quiet for once|pure chaos|fine, weirdly|one meeting after another|long",
        "activity": "a pub quiz|brunch|bowling|the cinema|a long walk|karaoke|a picnic",
        "weekday": "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday",
        "thing": "umbrella|phone case|pair of jeans|rucksack|kettle|pillow|raincoat",
        "city": "|".join(POOLS["town"] + POOLS["abroad"]),
        "sport": "football|tennis|snooker|rugby|darts|cricket|cycling",
        "sleep": "terribly|like a log|about four hours|on the sofa by accident",
        "late": "late|cancelled|packed|twenty minutes late",
        "relative": "my gran|my brother|my aunt|my dad|my cousin",
        "cuisine": "Thai|Turkish|Italian|Korean|Greek|Vietnamese|Mexican",
        "plant": "a basil plant|a tiny cactus|some tulips|a fern",
        "chore": "the ironing|a mountain of washing|my tax return|the hoovering|the fridge",
        "genre": "crime|fantasy|funny|sad|short",
        "clothing": "white shirt|new jumper|good trousers",
        "place": "the seaside|that festival|uni|the Christmas market|your old flat",
        "snack": "bag of crisps|packet of biscuits|tub of ice cream|bar of chocolate",
        "song": "that advert jingle|an old Abba song|the theme from that show",
        "feeling": "exhausting|stressful|lovely|surreal|bleak|chaotic",
        "treat": "takeaway|bath|nap|glass of wine|slice of cake|lie-in",
    }
)

Turn = tuple[str, str, str]  # (role, text, tag: "<fact no>:<key>" or "" for small talk)


def _parse(block: str) -> tuple[list[str], list, list[list[str]], list]:
    """A fact's slots, beats [[(who, key, alternatives)]], passing mentions and questions."""
    lines = block.split("\n")
    slots = lines[0].split()
    beats: list[list[tuple[str, str, list[str]]]] = [[]]
    mentions, asks = [], []
    for line in lines[1:]:
        if line == "--":
            beats.append([])
        elif line.startswith("~ "):
            mentions.append([part.strip() for part in line[2:].split("|")])
        elif line.startswith("? "):
            kind, style, keys, text = line[2:].split(" ", 3)
            asks.append((kind, style, keys.strip("[]").split(","), text))
        else:
            head, *alternatives = (part.strip() for part in line.split("|"))
            who, _, key = head.partition(" ")
            beats[-1].append((who, key, alternatives))
    return slots, beats, mentions, asks


def _fill(rng: random.Random, template: str, values: dict[str, str]) -> str:
    """Fill {slots}: from values when known, otherwise a random small-talk filler."""
    out = template
    while "{" in out:
        start = out.index("{")
        name = out[start + 1 : out.index("}", start)]
        value = values[name] if name in values else rng.choice(SMALL[name])
        out = out[:start] + value + out[start + len(name) + 2 :]
    return out


def _other(role: str) -> str:
    return "assistant" if role == "user" else "user"


def _small_talk(
    rng: random.Random, speaker: str, body: str, names: dict, friend: str
) -> list[Turn]:
    """One small-talk exchange: opener, reply, and sometimes a follow-up."""
    values = names[speaker] | {"friend": friend}
    turns = [(speaker, _fill(rng, rng.choice(PREFIXES) + body, values), "")]
    turns.append((_other(speaker), _fill(rng, rng.choice(REPLIES), names[_other(speaker)]), ""))
    if rng.random() < 0.3:
        turns.append((speaker, rng.choice(SMALL["followup"]), ""))
    return turns


def _session(
    rng: random.Random, blocks: list[list[Turn]], names: dict, friends: list[str], passing: list
) -> list[Turn]:
    """A greeting, then small talk with the session's fact blocks at random points; the
    speakers alternate (a fact block after its own speaker's turn gets a prompt first).
    Some small talk mentions earlier facts' names in passing, as people do."""
    target = rng.randint(18, 40)
    left = sum(len(block) + 1 for block in blocks)  # fact turns still to come, with prompts
    order: list[list[Turn] | None] = [None] * max(1, round((target - left) / 2.3)) + blocks
    rng.shuffle(order)
    openers = rng.sample(OPENERS, len(OPENERS))  # no template twice in one session
    first = rng.choice(("user", "assistant"))
    turns: list[Turn] = [(first, _fill(rng, rng.choice(SMALL["greeting"]), names[first]), "")]
    for block in order:
        if block is None and len(turns) + left + 3 > MAX_TURNS:
            continue
        if block is None:
            speaker = _other(turns[-1][0])
            own = [choices for role, choices in passing if role == speaker]
            body = rng.choice(rng.choice(own)) if own and rng.random() < MENTION else openers.pop()
            block = _small_talk(rng, speaker, body, names, rng.choice(friends))
        else:
            left -= len(block) + 1
            if block[0][0] == turns[-1][0]:
                turns.append((_other(block[0][0]), rng.choice(SMALL["prompt"]), ""))
        turns += [(role, text[0].upper() + text[1:], tag) for role, text, tag in block]
    return turns


def _dates(rng: random.Random, count: int) -> list[datetime]:
    """Session start times: days to weeks apart, at a plausible hour."""
    day = datetime(2024, 1, 6, tzinfo=UTC) + timedelta(days=rng.randint(0, 240))
    out = []
    for _ in range(count):
        day += timedelta(days=rng.randint(15, 35) if rng.random() < 0.15 else rng.randint(2, 13))
        out.append(day.replace(hour=rng.randint(7, 22), minute=rng.randint(0, 59)))
    return out


def _month(when: datetime) -> str:
    return f"{MONTHS.split()[when.month - 1]} {when.year}"


def _conversation(
    rng: random.Random, user: str, bot: str
) -> tuple[list[tuple[datetime, list[Turn]]], list[tuple[str, str, str, list[str]]]]:
    """One conversation: its dated sessions of tagged turns and its questions (answers as tags)."""
    drawn = {name: rng.sample(values, len(values)) for name, values in POOLS.items()}
    count = rng.randint(22, 30)
    dates = _dates(rng, count)
    friends = [drawn["friend"].pop() for _ in range(3)]  # who small talk mentions
    names = {"user": {"B": bot, "A": user}, "assistant": {"B": user, "A": bot}}
    pairs = [(name, owner) for name in FACTS for owner in (user, bot)]
    chosen = rng.sample(pairs, FACTS_PER_CONVERSATION)
    planned: list[list[list[Turn]]] = [[] for _ in range(count)]
    passing: list[list[tuple[str, list[str]]]] = [[] for _ in range(count)]
    asks = []
    for n, (name, owner) in enumerate(chosen):
        slots, beats, mentions, fact_asks = _parse(FACTS[name])
        values = {"A": owner, "B": bot if owner == user else user}
        for slot in slots:
            slot, _, pool = slot.partition("=")
            for i, part in enumerate(drawn[pool or slot].pop().split("; ")):
                values[slot + (f"_{i}" if i else "")] = part
        session_of: dict[str, int] = {}
        beat_months = []
        for b, beat in enumerate(beats):  # one session per beat, in its share of the timeline
            s = rng.randrange(b * count // len(beats), (b + 1) * count // len(beats))
            beat_months.append(_month(dates[s]))
            block = []
            for who, key, alternatives in beat:
                role = "user" if (who == "A") == (owner == user) else "assistant"
                text = _fill(rng, rng.choice(alternatives), values)
                block.append((role, text, f"{n}:{key}" if key else ""))
                session_of[key] = s
            planned[s].append(block)
        role = "user" if owner == user else "assistant"
        said = [(role, [_fill(rng, m, values) for m in choices]) for choices in mentions]
        for later in range(min(session_of.values()) + 1, count):  # once the fact is known
            passing[later] += said
        months = {f"m_{key}": _month(dates[s]) for key, s in session_of.items()}
        for kind, style, keys, text in fact_asks:
            if any(f"{{m_{k}}}" in text and beat_months.count(months[f"m_{k}"]) > 1 for k in keys):
                continue  # "in <month>" must single out one beat of the fact
            asks.append(
                (kind, style, _fill(rng, text, values | months), [f"{n}:{k}" for k in keys])
            )
    sessions = [
        (when, _session(rng, blocks, names, friends, talk))
        for when, blocks, talk in zip(dates, planned, passing, strict=True)
    ]
    return sessions, asks


def build(seed: int = 7) -> tuple[list[dict], list[dict]]:
    """(sessions for importSessions, questions [{persona, question, kind, style, answers,
    speakers}]); ``speakers`` names the conversation's user and companion.

    Answers are (global session index, message index) of the turns stating the fact; the
    shapes are dataset.build's, so run_eval.py can use either set."""
    rng = random.Random(seed)
    sessions: list[dict] = []
    questions: list[dict] = []
    tags: dict[tuple[int, int], str] = {}  # fact turns: position -> "conv-01/<fact>:<key>"
    expected: list[list[str]] = []  # per question, the tags of the turns meant to answer it
    for number, (user, bot) in enumerate(PAIRS):
        persona = f"conv-{number + 1:02d}"
        dated, asks = _conversation(rng, user, bot)
        where: dict[str, tuple[int, int]] = {}
        for when, turns in dated:
            at = int(when.timestamp() * 1000)
            messages = []
            for role, text, tag in turns:
                at += rng.randint(6, 240) * 1000
                messages.append({"role": role, "content": text, "createdAt": at})
                if tag:
                    tags[len(sessions), len(messages) - 1] = f"{persona}/{tag}"
                    where[f"{persona}/{tag}"] = (len(sessions), len(messages) - 1)
            start = int(when.timestamp() * 1000)
            meta = {"title": "chat", "characterId": persona, "createdAt": start, "updatedAt": at}
            sessions.append({"meta": meta, "messages": messages})
        for kind, style, text, keys in asks:
            expected.append([f"{persona}/{key}" for key in keys])
            answers = [where[key] for key in expected[-1]]
            questions.append({"persona": persona, "question": text, "kind": kind, "style": style,
                              "answers": answers, "speakers": {"user": user, "assistant": bot}})  # fmt: skip
    _check(sessions, questions, tags, expected)
    return sessions, questions


def _check(
    sessions: list[dict],
    questions: list[dict],
    tags: dict[tuple[int, int], str],
    expected: list[list[str]],
) -> None:
    """Every answer exists, is in the question's conversation and is exactly the fact turn
    generated for it (not small talk); multi-hop answers come from two or more sessions."""
    for q, keys in zip(questions, expected, strict=True):
        assert len(q["answers"]) == len(keys), q
        for (s, m), key in zip(q["answers"], keys, strict=True):
            assert sessions[s]["meta"]["characterId"] == q["persona"], q
            assert 0 <= m < len(sessions[s]["messages"]) and tags.get((s, m)) == key, q
        if q["kind"] == "multi-hop":
            assert len({s for s, _ in q["answers"]}) >= 2, q


def _summary(sessions: list[dict], questions: list[dict]) -> None:
    conversations = sorted({s["meta"]["characterId"] for s in sessions})
    messages = sum(len(s["messages"]) for s in sessions)
    small = {m["content"] for s in sessions for m in s["messages"]}
    print(f"{len(conversations)} conversations, {len(sessions)} sessions, {messages} messages")
    print(f"average turns per conversation: {messages / len(conversations):.0f}")
    print(f"distinct message texts: {len(small)}")
    print(f"{len(questions)} questions")
    for kind in ("single-hop", "multi-hop", "temporal", "open-domain"):
        chosen = [q for q in questions if q["kind"] == kind]
        styles = {st: sum(q["style"] == st for q in chosen) for st in ("named", "paraphrase")}
        detail = f"  ({styles['named']} named, {styles['paraphrase']} paraphrase)"
        print(f"  {kind:<12} {len(chosen):>4}" + (detail if kind == "single-hop" else ""))


if __name__ == "__main__":
    _summary(*build())
