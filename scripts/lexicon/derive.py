#!/usr/bin/env python3
"""derive.py: writes data/lexicon.tsv, the word table the built-in corpus will draw
from, out of WordNet 3.0 (Debian's wordnet-base: /usr/share/wordnet) and the English
word frequencies of the wordfreq package.

    apt-get install -y wordnet-base
    make lexicon-deps                  # .venv-lexicon with wordfreq==3.1.1
    .venv-lexicon/bin/python scripts/lexicon/derive.py --out data/lexicon.tsv

Any Python 3.8+ runs it (the Debian /usr/bin/python3 or pyenv's) as long as it
imports wordfreq; the venv of `make lexicon-deps` is the tested way. The open
classes (nouns, verbs, adjectives) come from WordNet; the closed classes
(determiners, pronouns, prepositions, particles, conjunctions) are the hand lists
below. docs/corpus.md ("Where the words come from") says which WordNet fields
decide what, and data/lexicon.h what the columns and tags mean to the C side.
Same inputs, same bytes: every list is sorted before it is written.
"""
import argparse
import os
import re
import sys
from typing import Dict, List, Optional, Set, Tuple

PROG = "derive"

# lexnames(5WN): the lexicographer file of each synset, by the number data.* gives.
LEXNAMES = [
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal",
    "noun.artifact", "noun.attribute", "noun.body", "noun.cognition",
    "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group",
    "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon",
    "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation",
    "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body",
    "verb.change", "verb.cognition", "verb.communication", "verb.competition",
    "verb.consumption", "verb.contact", "verb.creation", "verb.emotion",
    "verb.motion", "verb.perception", "verb.possession", "verb.social",
    "verb.stative", "verb.weather", "adj.ppl",
]
ANIMATE_FILES = {"noun.person": "person", "noun.animal": "animal"}
# Concrete things a sentence can put near, on or in something: the lexicographer
# files whose nouns can stand where the corpus puts objects and places. Abstract
# files (act, attribute, cognition, communication, event, feeling, ...) are left out.
INANIMATE_FILES = {
    "noun.artifact": "artifact", "noun.food": "food", "noun.object": "object",
    "noun.plant": "plant", "noun.substance": "substance", "noun.location": "location",
}
ANIMATE_EVIDENCE_FILES = {"noun.feeling", "noun.motive"}
# person.n.01 and animal.n.01: an animate noun's sense must descend from one of
# them, since noun.animal also files parts and products of animals ("wing", "egg").
ANIMATE_ROOTS = {"person": 7846, "animal": 15388}

# Generic verb frames (wninput(5WN)): which say the verb stands alone after its
# subject, which take a direct object, and which a that-clause.
FRAMES_INTRANS = {1, 2}                 # Something ----s / Somebody ----s
FRAMES_OBJ_THING = {8, 11}              # ... ----s something
FRAMES_OBJ_ANIMATE = {9, 10}            # ... ----s somebody
FRAMES_SUBJ_THING = {1, 3, 4, 5, 6, 10, 11, 12, 34, 35}   # Something / It ...
FRAME_CLAUSE = 26                       # Somebody ----s that CLAUSE

# Verbs that are auxiliaries, modals or copulas in English: their frequency is
# that of their grammatical use, and the corpus writes those itself.
VERB_STOP = {"be", "can", "will", "may", "must", "shall", "might", "could", "would",
             "should", "ought", "dare", "need", "do", "have", "get", "let", "seem",
             "become", "use", "used"}
# Nouns whose plural is the singular, which noun.exc leaves out; by hand.
ZERO_PLURAL = {"sheep", "deer", "fish", "moose", "salmon", "trout", "aircraft",
               "spacecraft", "series", "species", "offspring", "bison", "cod"}
# Nouns that behave as pronouns or forms of address.
NOUN_STOP = {"nobody", "somebody", "someone", "everyone", "everybody", "anyone",
             "anybody", "sir", "madam", "mister", "self", "thing", "things"}
# Adjectives that count, order or point rather than describe.
ADJ_STOP = {
    "other", "any", "such", "much", "many", "more", "most", "few", "less", "least",
    "both", "own", "last", "next", "same", "several", "whole", "entire", "certain",
    "various", "additional", "extra", "main", "former", "previous", "following",
    "due", "likely", "possible", "able", "sure", "said", "only", "very", "else",
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
    "ninth", "tenth", "one", "two", "three", "four", "five", "six", "seven", "eight",
    "nine", "ten", "eleven", "twelve", "twenty", "thirty", "forty", "fifty", "hundred",
    "thousand", "million", "billion", "anti", "super", "okay", "ok", "enough",
}
# Words kept out of every open class: slurs and insults, sexual and scatological
# words, words of killing and weapons, and words whose most frequent modern use is
# one of those. Matched on the lemma and
# on every form.
BLOCKLIST = {
    "ass", "asshole", "bastard", "bitch", "boob", "butt", "cock", "crap", "cunt",
    "damn", "dick", "dyke", "fag", "faggot", "fuck", "gay", "hell", "homo", "hooker",
    "jerk", "kill", "nigger", "negro", "penis", "piss", "porn", "prick", "pussy",
    "queer", "rape", "screw", "sex", "sexy", "shit", "slut", "suck", "tit", "twat",
    "vagina", "whore", "wank", "erotic", "vulgar", "retard", "retarded", "spastic", "cripple", "midget",
    "nazi", "terrorist", "suicide", "murder", "gun", "bomb", "nude", "naked",
    "pimp", "stripper", "breast", "condom", "virgin", "lesbian", "dildo", "orgasm",
    "erection", "semen", "sperm", "anus", "rectum", "feces", "poop", "pee", "fart",
    "bloody", "goddamn", "heroin", "cocaine", "meth", "hitler", "slave", "slavery", "gypsy", "eskimo",
    "oriental", "savage", "junkie", "lunatic", "idiot", "moron", "imbecile",
    "dummy", "freak", "loser", "fatso", "ugly", "stupid", "dumb", "lame",
    "dead", "die", "corpse", "torture", "abuse", "victim", "shoot", "stab", "hang",
}

# The closed classes, by hand: (word, tags). The tags are those data/lexicon.h names.
CLOSED = {
    "det": [
        ("a", "sg"), ("an", "sg"), ("the", "sg,pl"), ("this", "sg"), ("that", "sg"),
        ("these", "pl"), ("those", "pl"), ("every", "sg"), ("each", "sg"),
        ("one", "sg"), ("some", "sg,pl"), ("many", "pl"), ("few", "pl"),
        ("several", "pl"), ("all", "pl"), ("two", "pl"), ("three", "pl"),
        ("my", "sg,pl"), ("your", "sg,pl"), ("his", "sg,pl"), ("her", "sg,pl"),
        ("its", "sg,pl"), ("our", "sg,pl"), ("their", "sg,pl"), ("no", "sg,pl"),
        ("another", "sg"),
    ],
    "pron": [
        ("i", "subj,sg,first"), ("you", "subj,obj,sg,pl,second"),
        ("he", "subj,sg,third,animate"), ("she", "subj,sg,third,animate"),
        ("it", "subj,obj,sg,third,inanimate"), ("we", "subj,pl,first"),
        ("they", "subj,pl,third"), ("me", "obj,sg,first"),
        ("him", "obj,sg,third,animate"), ("her", "obj,sg,third,animate"),
        ("us", "obj,pl,first"), ("them", "obj,pl,third"),
    ],
    "prep": [
        ("near", "place"), ("by", "place"), ("behind", "place"), ("under", "place"),
        ("beside", "place"), ("with", "place"), ("above", "place"), ("around", "place"),
        ("beyond", "place"), ("inside", "place"), ("at", "place"), ("on", "place"),
        ("in", "place"), ("from", "place"), ("over", "place"), ("below", "place"),
        ("between", "place"), ("outside", "place"), ("among", "place"),
        ("to", "path"), ("into", "path"), ("past", "path"), ("across", "path"),
        ("toward", "path"), ("through", "path"), ("along", "path"), ("onto", "path"),
    ],
    "particle": [
        ("up", "-"), ("down", "-"), ("away", "-"), ("out", "-"), ("off", "-"),
        ("in", "-"), ("on", "-"), ("back", "-"), ("around", "-"), ("along", "-"),
        ("over", "-"), ("about", "-"),
    ],
    "conj": [
        ("and", "coord"), ("but", "coord"), ("or", "coord"), ("so", "coord"),
        ("because", "subord"), ("while", "subord"), ("when", "subord"),
        ("although", "subord"), ("if", "subord"), ("until", "subord"),
    ],
}
CLASS_ORDER = ["noun", "verb", "adj", "det", "pron", "prep", "particle", "conj"]

WORD_RE = re.compile(r"^[a-z]+$")


def fail(msg: str, code: int = 1) -> None:
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    sys.exit(code)


def read_lines(path: str) -> List[str]:
    try:
        with open(path, encoding="ascii", errors="strict") as f:
            return f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        fail(f"cannot read {path}: {e}")
    return []


class Synset:
    __slots__ = ("lexname", "words", "ptrs", "frames", "gloss")

    def __init__(self, lexname, words, ptrs, frames, gloss):
        self.lexname = lexname
        self.words = words        # [(word as written, lex_id, adjective marker or "")]
        self.ptrs = ptrs          # [(symbol, offset, pos)]
        self.frames = frames      # [(frame number, word number or 0 for all)]
        self.gloss = gloss


def parse_data(path: str, pos: str) -> Dict[int, Synset]:
    """data.<pos> (wndb(5WN)): one synset a line after the licence lines."""
    out = {}
    for line in read_lines(path):
        if line.startswith("  "):
            continue
        head, _, gloss = line.partition(" | ")
        f = head.split()
        off, lexfile = int(f[0]), int(f[1], 10)
        nw = int(f[3], 16)
        i = 4
        words = []
        for _ in range(nw):
            w = f[i]
            m = re.match(r"^(.*?)(\((?:a|p|ip)\))?$", w)
            words.append((m.group(1), int(f[i + 1], 16), m.group(2) or ""))
            i += 2
        np_ = int(f[i]); i += 1
        ptrs = []
        for _ in range(np_):
            ptrs.append((f[i], int(f[i + 1]), f[i + 2]))
            i += 4
        frames = []
        if pos == "verb" and i < len(f):
            nf = int(f[i]); i += 1
            for _ in range(nf):
                frames.append((int(f[i + 1]), int(f[i + 2], 16)))
                i += 3
        out[off] = Synset(LEXNAMES[lexfile], words, ptrs, frames, gloss)
    return out


def parse_index(path: str) -> Dict[str, List[int]]:
    """index.<pos>: each lemma's synsets, most frequent sense first."""
    out = {}
    for line in read_lines(path):
        if line.startswith("  "):
            continue
        f = line.split()
        lemma, ptr_cnt = f[0], int(f[3])
        nsense = int(f[4 + ptr_cnt])
        out[lemma] = [int(x) for x in f[6 + ptr_cnt:6 + ptr_cnt + nsense]]
    return out


def parse_exc(path: str) -> Dict[str, List[str]]:
    """<pos>.exc: "inflected base..." lines, turned round: base -> inflected forms."""
    out: Dict[str, List[str]] = {}
    for line in read_lines(path):
        f = line.split()
        for base in f[1:]:
            out.setdefault(base, []).append(f[0])
    return out


def parse_counts(path: str) -> Tuple[Dict[Tuple[str, str, int, int], int], Dict[Tuple[str, str], int]]:
    """cntlist.rev: semantic-concordance tag counts per sense key, and their sum per
    (lemma, part of speech)."""
    pos_of = {"1": "noun", "2": "verb", "3": "adj", "4": "adv", "5": "adj"}
    sense, total = {}, {}
    for line in read_lines(path):
        key, _, cnt = line.split()
        lemma, _, rest = key.partition("%")
        ss, lexfile, lexid = rest.split(":")[:3]
        pos = pos_of[ss]
        k = (lemma, pos, int(lexfile), int(lexid))
        sense[k] = sense.get(k, 0) + int(cnt)
        total[(lemma, pos)] = total.get((lemma, pos), 0) + int(cnt)
    return sense, total


def word_index(syn: Synset, lemma: str) -> Tuple[int, int]:
    """The 1-based position of lemma in syn and its lex_id."""
    for i, (w, lexid, _) in enumerate(syn.words):
        if w.lower() == lemma:
            return i + 1, lexid
    return 0, -1


def proper(syn: Synset, lemma: str) -> bool:
    """Whether syn writes lemma with a capital: a name ("London", "Jesus")."""
    return any(w.lower() == lemma and w != lemma for w, _, _ in syn.words)


class WordNet:
    def __init__(self, root: str):
        self.data = {p: parse_data(os.path.join(root, "data." + p), p)
                     for p in ("noun", "verb", "adj")}
        self.index = {p: parse_index(os.path.join(root, "index." + p))
                      for p in ("noun", "verb", "adj")}
        self.exc = {p: parse_exc(os.path.join(root, p + ".exc")) for p in ("noun", "verb")}
        self.sense_cnt, self.pos_cnt = parse_counts(os.path.join(root, "cntlist.rev"))
        self.verb_form_of: Dict[str, List[str]] = {}  # inflected form -> verbs
        for base, forms in self.exc["verb"].items():
            for f in forms:
                self.verb_form_of.setdefault(f, []).append(base)
        self.plural_of: Dict[str, List[str]] = {}     # irregular plural -> singulars
        for base, forms in self.exc["noun"].items():
            for f in forms:
                self.plural_of.setdefault(f, []).append(base)

    def senses(self, pos: str, lemma: str) -> List[Tuple[Synset, int]]:
        """(synset, tag count) for each sense of lemma, most frequent first."""
        out = []
        for off in self.index[pos].get(lemma, []):
            syn = self.data[pos][off]
            _, lexid = word_index(syn, lemma)
            lexfile = LEXNAMES.index(syn.lexname)
            out.append((syn, self.sense_cnt.get((lemma, pos, lexfile, lexid), 0)))
        return out

    def descends(self, off: int, root: int) -> bool:
        """Whether noun synset off is root or below it (hypernyms, instance ones too)."""
        seen, todo = set(), [off]
        while todo:
            o = todo.pop()
            if o == root:
                return True
            if o in seen:
                continue
            seen.add(o)
            todo += [t for sym, t, pos in self.data["noun"][o].ptrs if sym in ("@", "@i")]
        return False

    def is_plural(self, lemma: str) -> bool:
        """Whether lemma is the plural of another noun ("parts", "ways", "data")."""
        if any(b != lemma for b in self.plural_of.get(lemma, [])):
            return True
        for base in (lemma[:-1], lemma[:-2], lemma[:-3] + "y"):
            if base in self.index["noun"] and regular_s(base) == lemma:
                return True
        return False

    def is_verb_form(self, word: str) -> bool:
        """Whether word is an inflected form of a verb: in verb.exc, or a verb's
        -ed or -ing form by the regular rules ("missing", "based", "stopped")."""
        if any(b != word for b in self.verb_form_of.get(word, [])):
            return True
        for suffix in ("ed", "ing"):
            if word.endswith(suffix):
                stem = word[:-len(suffix)]
                for base in (stem, stem + "e", stem[:-1] + "y" if suffix == "ed" and
                             stem.endswith("i") else stem):
                    if base in self.index["verb"]:
                        return True
        return False

    def mostly_name(self, lemma: str) -> bool:
        """A word that is also a name ("john", "harry", "don", "china") and has
        fewer than NAME_TAGS tagged uses as a common word: its frequency counts
        the name's uses. ("Sister", "CAT" are names too, but "sister" and "cat"
        are tagged often.)"""
        if lemma in GIVEN_NAMES:
            return True
        named = any(proper(self.data["noun"][off], lemma)
                    for off in self.index["noun"].get(lemma, []))
        tagged = sum(self.pos_cnt.get((lemma, p), 0) for p in ("noun", "verb", "adj", "adv"))
        return named and tagged < NAME_TAGS

    def main_pos(self, lemma: str) -> Optional[str]:
        """The part of speech with the most tagged uses of lemma (ties: more senses,
        then noun before verb before adjective); None if it has no tagged use."""
        best, key = None, None
        for p in ("noun", "verb", "adj", "adv"):
            cnt = self.pos_cnt.get((lemma, p), 0)
            nsense = len(self.index.get(p, {}).get(lemma, []))
            k = (cnt, nsense)
            if cnt > 0 and (key is None or k > key):
                best, key = p, k
        return best


def common_senses(senses: List[Tuple[Synset, int]]) -> List[Synset]:
    """The first sense and every other with at least a quarter of its tag count."""
    top = senses[0][1]
    return [s for i, (s, c) in enumerate(senses) if i == 0 or (top > 0 and 4 * c >= top)]


def ends_sibilant(w: str) -> bool:
    return w.endswith(("s", "x", "z", "ch", "sh"))


def regular_s(w: str) -> str:
    """The -s form: plural of a noun, third person singular of a verb."""
    if ends_sibilant(w):
        return w + "es"
    if w.endswith("y") and len(w) > 1 and w[-2] not in "aeiou":
        return w[:-1] + "ies"
    return w + "s"


def regular_ed(w: str) -> str:
    if w.endswith("e"):
        return w + "d"
    if w.endswith("y") and len(w) > 1 and w[-2] not in "aeiou":
        return w[:-1] + "ied"
    return w + "ed"


# Endings of irregular participles: never a past ("taken", "shown", "worn"), or
# mostly not ("gone", "begun", "sung", "swum", "drunk", "lain"; but "shone", "hung").
PARTICIPLE_ONLY = ("en", "wn", "rn")
PARTICIPLE_MOSTLY = ("ne", "un", "ung", "um", "unk", "ain")
NAME_TAGS = 10        # tagged uses that make a name's homograph a common word
# Given names that WordNet knows only as common words ("to harry", "a bob"): by hand.
GIVEN_NAMES = {"harry", "victor", "bob", "pat", "ray", "rob", "jimmy", "jack", "sue",
               "frank", "don", "bill", "pete", "bud", "chuck", "nick", "sally", "jerry",
               "gill", "dick", "tommy", "bobby", "billy", "peter", "willy", "reed", "ted",
               "mike"}
PAST_IN_USE = 100     # uses per 10^9 words for a candidate past to count as a word
# Verbs whose past is the base, which WordNet's exception list leaves out (its
# morphy finds them without one); by hand.
NO_CHANGE_PAST = {
    "bet", "bid", "broadcast", "burst", "cast", "cost", "cut", "fit", "forecast",
    "hit", "hurt", "let", "put", "quit", "read", "rid", "set", "shed", "shut",
    "slit", "split", "spread", "thrust", "upset", "wet", "beat", "spit",
}


class Freq:
    def __init__(self):
        try:
            import wordfreq  # noqa: F401
        except ImportError:
            fail("cannot import wordfreq: run `make lexicon-deps` and use "
                 ".venv-lexicon/bin/python")
        import wordfreq
        self.wf = wordfreq
        self.cache: Dict[str, int] = {}

    def per_billion(self, w: str) -> int:
        """Uses per 10^9 words in wordfreq's English "large" list, rounded."""
        if w not in self.cache:
            f = self.wf.word_frequency(w, "en", wordlist="large")
            self.cache[w] = int(f * 1e9 + 0.5)
        return self.cache[w]


def pick(cands: List[str], freq: Freq) -> str:
    """The most frequent of the candidates; on a tie the first (the regular form)."""
    best = cands[0]
    for c in cands[1:]:
        if freq.per_billion(c) > freq.per_billion(best):
            best = c
    return best


def plural(wn: WordNet, freq: Freq, sg: str) -> str:
    cands = [regular_s(sg)]
    if sg.endswith("o"):
        cands.append(sg + "es")
    if sg.endswith("man"):
        cands.append(sg[:-3] + "men")     # morphy's rule, so noun.exc omits these
    cands += [f for f in wn.exc["noun"].get(sg, []) if f != sg]
    return sg if sg in ZERO_PLURAL else pick(cands, freq)


def verb_forms(wn: WordNet, freq: Freq, base: str) -> Tuple[str, str]:
    """(third person singular present, past) of base. verb.exc lists the irregular
    forms (pasts and participles together) and the regular ones morphy cannot undo
    ("stopped"); a past that equals the base ("cut") is in neither: NO_CHANGE_PAST."""
    exc = [f for f in wn.exc["verb"].get(base, []) if WORD_RE.match(f) and f != base]
    third_cands = [regular_s(base)] + ([base + "es"] if base.endswith("o") else [])
    third = pick(third_cands + [f for f in exc if f.endswith("s")
                                and not f.endswith("ed")], freq)
    if base in NO_CHANGE_PAST:
        return third, base
    cands = [regular_ed(base)] + [f for f in exc if not f.endswith("ing") and
                                  f != third and not f.endswith(PARTICIPLE_ONLY) and
                                  not (f.endswith("s") and not f.endswith("ss"))]
    # A form that is a participle as often as a past ("begun", "gone", "hung")
    # gives way to any other candidate in use.
    finite = [f for f in cands if not f.endswith(PARTICIPLE_MOSTLY) and
              freq.per_billion(f) >= PAST_IN_USE]
    if finite:
        cands = finite
    # verb.exc misses some doubled pasts ("hopped"), and the plain rule would give
    # another verb's past ("hoped"): a doubled form in use wins.
    if re.search(r"[^aeiou][aeiou][bdgklmnprt]$", base):
        doubled = base + base[-1] + "ed"
        if freq.per_billion(doubled) >= PAST_IN_USE:
            return third, doubled
    return third, pick(cands, freq)


def clean(wn: "WordNet", w: str, freq: Freq, floor: int) -> bool:
    """Lowercase letters, common enough, not blocked, and not mostly a name."""
    return bool(WORD_RE.match(w)) and len(w) >= 2 and w not in BLOCKLIST and \
        freq.per_billion(w) >= floor and not wn.mostly_name(w)


def noun_row(wn: WordNet, freq: Freq, lemma: str) -> Optional[Tuple[str, str, str, str]]:
    senses = wn.senses("noun", lemma)
    if not senses or lemma in NOUN_STOP or proper(senses[0][0], lemma) or \
            wn.is_plural(lemma):
        return None
    first = senses[0][0].lexname
    if first in ANIMATE_FILES:
        kind = ANIMATE_FILES[first]
        if not wn.descends(wn.index["noun"][lemma][0], ANIMATE_ROOTS[kind]):
            return None
        tags = ["animate", kind]
    elif first in INANIMATE_FILES:
        # A thing only if no common sense is a person or an animal ("star", "cook").
        if any(s.lexname in ANIMATE_FILES for s in common_senses(senses)):
            return None
        tags = ["inanimate", INANIMATE_FILES[first]]
    else:
        return None
    pl = plural(wn, freq, lemma)
    if pl in BLOCKLIST:
        return None
    # Mass nouns: the plural is rare next to the singular ("water", "rice").
    if pl != lemma and freq.per_billion(pl) * 50 < freq.per_billion(lemma):
        tags.append("mass")
    return (lemma, pl, "-", ",".join(tags))


def verb_row(wn: WordNet, freq: Freq, lemma: str) -> Optional[Tuple[str, str, str, str]]:
    senses = wn.senses("verb", lemma)
    if not senses or lemma in VERB_STOP:
        return None
    frames: Set[int] = set()
    first_frames: Set[int] = set()
    for syn in common_senses(senses):
        pos, _ = word_index(syn, lemma)
        frames |= {fn for fn, wnum in syn.frames if wnum in (0, pos)}
        if not first_frames:
            first_frames = set(frames)
    tags = []
    if frames & FRAMES_INTRANS:
        tags.append("intrans")
    if frames & (FRAMES_OBJ_THING | FRAMES_OBJ_ANIMATE):
        tags.append("trans")
    if not tags:
        return None
    if frames & FRAMES_OBJ_THING:
        tags.append("obj_thing")
    if frames & FRAMES_OBJ_ANIMATE:
        tags.append("obj_animate")
    if not frames & FRAMES_SUBJ_THING:
        tags.append("subj_animate")
    if FRAME_CLAUSE in first_frames and senses[0][0].lexname == "verb.communication":
        tags.append("speech")
    third, past = verb_forms(wn, freq, lemma)
    if third in BLOCKLIST or past in BLOCKLIST:
        return None
    return (lemma, third, past, ",".join(tags))


def example_heads(gloss: str, words: Set[str]) -> List[str]:
    """The word after the adjective in each quoted example of a gloss."""
    heads = []
    for ex in re.findall(r'"([^"]*)"', gloss):
        toks = re.findall(r"[a-z]+", ex.lower())
        for i, t in enumerate(toks[:-1]):
            if t in words:
                heads.append(toks[i + 1])
    return heads


def noun_kind(wn: WordNet, lemma: str) -> Optional[str]:
    """animate or inanimate by the first sense of lemma, or of its singular."""
    for cand in [lemma] + wn.plural_of.get(lemma, []) + \
            ([lemma[:-1]] if lemma.endswith("s") else []):
        senses = wn.index["noun"].get(cand)
        if senses:
            ln = wn.data["noun"][senses[0]].lexname
            if ln in ANIMATE_FILES:
                return "animate"
            if ln in INANIMATE_FILES:
                return "inanimate"
            return None
    return None


def adj_row(wn: WordNet, freq: Freq, lemma: str) -> Optional[Tuple[str, str, str, str]]:
    senses = wn.senses("adj", lemma)
    if not senses:
        return None
    syn = senses[0][0]
    # Relational adjectives ("atomic", "presidential") and participles ("known",
    # "running") are not properties the corpus can give a noun.
    if syn.lexname in ("adj.pert", "adj.ppl") or proper(syn, lemma) or \
            lemma in ADJ_STOP or wn.is_verb_form(lemma):
        return None
    tags = []
    anim = thing = 0
    words = {w.lower() for w, _, _ in syn.words}
    for h in example_heads(syn.gloss, words):
        k = noun_kind(wn, h)
        anim += k == "animate"
        thing += k == "inanimate"
    anim_links = any(sym in ("+", "=") and pos == "n" and
                     wn.data["noun"][off].lexname in ANIMATE_EVIDENCE_FILES
                     for sym, off, pos in syn.ptrs)
    if anim_links or (anim >= 2 and not thing):
        tags.append("fits_animate")
    elif thing >= 2 and not anim:
        tags.append("fits_thing")
    marker = next((m for w, _, m in syn.words if w.lower() == lemma), "")
    if marker == "(a)":
        tags.append("attr_only")
    elif marker == "(p)":
        tags.append("pred_only")
    return (lemma, "-", "-", ",".join(tags) if tags else "-")


def derive(wn: WordNet, freq: Freq, floor: int) -> List[Tuple[str, str, str, str, str, int]]:
    rows = []
    claimed: Dict[str, str] = {}      # surface form -> "class word" that owns it
    for cls in CLASS_ORDER[3:]:
        for w, tags in CLOSED[cls]:
            rows.append((cls, w, "-", "-", tags, freq.per_billion(w)))
            claimed.setdefault(w, "closed")
    makers = {"noun": noun_row, "verb": verb_row, "adj": adj_row}
    cands = []
    for pos in ("noun", "verb", "adj"):
        for lemma in wn.index[pos]:
            if clean(wn, lemma, freq, floor) and wn.main_pos(lemma) == pos:
                cands.append((freq.per_billion(lemma), lemma, pos))
    # The more frequent word keeps a surface form two words share ("leaves": leaf
    # or leave), so that every open-class form names one word.
    cands.sort(key=lambda c: (-c[0], c[1], c[2]))
    for f, lemma, pos in cands:
        row = makers[pos](wn, freq, lemma)
        if row is None:
            continue
        forms = {x for x in row[:3] if x != "-"}
        if any(not WORD_RE.match(x) or x in BLOCKLIST for x in forms):
            continue
        if any(claimed.get(x, pos + " " + lemma) != pos + " " + lemma for x in forms):
            continue
        for x in forms:
            claimed[x] = pos + " " + lemma
        rows.append((pos, row[0], row[1], row[2], row[3], f))
    rows.sort(key=lambda r: (CLASS_ORDER.index(r[0]), -r[5], r[1]))
    return rows


HEADER = """\
# lexicon.tsv: the words of the built-in corpus, one a line, written by
# scripts/lexicon/derive.py (docs/corpus.md, "Where the words come from"); do not
# edit by hand. Columns, tab-separated: class, word, form1, form2, tags, freq.
#   noun: word singular, form1 plural;  verb: word base (= plural present),
#   form1 third person singular present, form2 past;  "-": no such form or tag.
#   freq: uses per 10^9 words (wordfreq 3.1.1, English, "large" list).
# Sorted by class, then freq falling, then word.
#
# The open classes are derived from WordNet 3.0:
#   WordNet 3.0 Copyright 2006 by Princeton University.  All rights reserved.
#   Permission to use, copy, modify and distribute this software and database
#   and its documentation for any purpose and without fee or royalty is hereby
#   granted, provided that you agree to comply with the following copyright
#   notice and statements, including the disclaimer, and that the same appear
#   on ALL copies of the software, database and documentation, including
#   modifications that you make for internal use or for distribution.
#   THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS" AND PRINCETON UNIVERSITY
#   MAKES NO REPRESENTATIONS OR WARRANTIES, EXPRESS OR IMPLIED.  BY WAY OF
#   EXAMPLE, BUT NOT LIMITATION, PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS
#   OR WARRANTIES OF MERCHANTABILITY OR FITNESS FOR ANY PARTICULAR PURPOSE OR
#   THAT THE USE OF THE LICENSED SOFTWARE, DATABASE OR DOCUMENTATION WILL NOT
#   INFRINGE ANY THIRD PARTY PATENTS, COPYRIGHTS, TRADEMARKS OR OTHER RIGHTS.
#   The name of Princeton University or Princeton may not be used in
#   advertising or publicity pertaining to distribution of the software and/or
#   database.  Title to copyright in this software, database and any
#   associated documentation shall at all times remain with Princeton
#   University and LICENSEE agrees to preserve same.
# The freq column is derived from wordfreq's data (Robyn Speer), licensed
# CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/): this column is
# shared under the same licence. wordfreq's English list draws on SUBTLEX
# (Brysbaert et al., freely available), Wikipedia, OpenSubtitles 2018, Google
# Books Ngrams, the Leeds Internet Corpus, ParaCrawl, and other sources.
"""


def write_table(path: str, rows) -> None:
    if os.path.exists(path) and not os.path.isfile(path):
        fail(f"{path}: not a regular file; refusing to write", 2)
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="ascii", newline="\n") as f:
            f.write(HEADER)
            for r in rows:
                f.write("\t".join(str(x) for x in r) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        fail(f"cannot write {path}: {e}")


def main() -> None:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--wordnet", default="/usr/share/wordnet",
                    help="WordNet 3.0 dict folder (default %(default)s)")
    ap.add_argument("--out", default="data/lexicon.tsv",
                    help="table to write (default %(default)s)")
    ap.add_argument("--floor", type=int, default=2000,
                    help="least uses per 10^9 words an open-class word needs "
                         "(default %(default)s, Zipf 3.3)")
    a = ap.parse_args()
    if a.floor < 1:
        fail(f"--floor {a.floor}: must be at least 1", 2)
    if not os.path.isfile(os.path.join(a.wordnet, "data.noun")):
        fail(f"{a.wordnet}: no data.noun; apt-get install -y wordnet-base", 1)
    try:
        wn = WordNet(a.wordnet)
    except (ValueError, IndexError, KeyError) as e:
        fail(f"{a.wordnet}: not the WordNet 3.0 database files ({type(e).__name__}: {e})")
    rows = derive(wn, Freq(), a.floor)
    write_table(a.out, rows)
    counts = {}
    for r in rows:
        counts[r[0]] = counts.get(r[0], 0) + 1
    print(f"{PROG}: {a.out}: " + ", ".join(f"{c} {counts.get(c, 0)}" for c in CLASS_ORDER),
          file=sys.stderr)


if __name__ == "__main__":
    main()
