/*
 * Stop-word lists of LiteCore's unicodesn tokenizer (option "stopwords=<language>"): the
 * Snowball project's English and French lists (snowballstem.org, BSD licence), space-separated.
 * LiteCore has lists for these two languages only; other languages get none.
 */
#ifndef UNICODESN_STOPWORDS_H
#define UNICODESN_STOPWORDS_H

static const char kEnglishStopWords[] =
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his himself "
    "she her hers herself it its itself they them their theirs themselves what which who whom "
    "this that these those am is are was were be been being have has had having do does did "
    "doing would should could ought i'm you're he's she's it's we're they're i've you've we've "
    "they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll isn't "
    "aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't wouldn't shan't "
    "shouldn't can't cannot couldn't mustn't let's that's who's what's here's there's when's "
    "where's why's how's a an the and but if or because as until while of at by for with about "
    "against between into through during before after above below to from up down in out on "
    "off over under again further then once here there when where why how all any both each few "
    "more most other some such no nor not only own same so than too very";

static const char kFrenchStopWords[] =
    "au aux avec ce ces dans de des du elle en et eux il je la le leur lui ma mais me même mes "
    "moi mon ne nos notre nous on ou par pas pour qu que qui sa se ses son sur ta te tes toi ton "
    "tu un une vos votre vous c d j l à m n s t y été étée étées étés étant suis es est sommes "
    "êtes sont serai seras sera serons serez seront serais serait serions seriez seraient étais "
    "était étions étiez étaient fus fut fûmes fûtes furent sois soit soyons soyez soient fusse "
    "fusses fût fussions fussiez fussent ayant eu eue eues eus ai as avons avez ont aurai auras "
    "aura aurons aurez auront aurais aurait aurions auriez auraient avais avait avions aviez "
    "avaient eut eûmes eûtes eurent aie aies ait ayons ayez aient eusse eusses eût eussions "
    "eussiez eussent ceci cela celà cet cette ici ils les leurs quel quels quelle quelles sans soi";

#endif /* UNICODESN_STOPWORDS_H */
