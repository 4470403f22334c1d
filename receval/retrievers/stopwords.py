"""Stopword lists for ``tokenizer.stopwords=true``, by ``tokenizer.language``.

Short on purpose: each list holds only a language's articles, pronouns, auxiliaries,
prepositions and conjunctions, the words frequent in every text, so no content word is
ever dropped. Written here (nothing is downloaded at run time, and no installed
package ships multilingual lists); a language without a list is refused with the
languages that have one.
"""

from __future__ import annotations

ENGLISH = """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves"""

FRENCH = """au aux avec ce ces dans de des du elle elles en et eux il ils je la le les leur
    leurs lui ma mais me même mes moi mon ne nos notre nous on ou par pas pour qu que qui sa
    se ses son sur ta te tes toi ton tu un une vos votre vous c d j l à m n s t y été être
    est sont était suis es sommes êtes ont ai as avons avez a"""

GERMAN = """aber als am an auch auf aus bei bin bis bist da dass dem den der des die dies
    diese dieser dieses du durch ein eine einem einen einer eines er es für hat haben hatte
    ich ihr ihre im in ist ja kein mit nach nicht noch nur oder sich sie sind so um und uns
    unser von vor war waren was wir wird werden wie zu zum zur über"""

SPANISH = """a al algo ante como con contra de del desde donde durante e el ella ellas
    ellos en entre era es esa ese eso esta este esto fue ha han hasta la las le les lo los
    me mi mis muy más nos o os para pero por que qué se sin sobre su sus también te tu un
    una uno y ya yo él está están son ser"""

ITALIAN = """a ad al alla alle allo agli ai anche che chi ci come con da dal dalla dei del
    della delle dello di e ed gli ha hanno i il in io la le lei lo loro lui ma mi ne nei
    nel nella noi non o per più se si sono su sua sue suo suoi tra tu un una uno voi è"""

PORTUGUESE = """a ao aos as com como da das de do dos e ela elas ele eles em entre era
    essa esse eu foi for há isso isto já lhe mais mas me meu minha muito na nas no nos não
    o os ou para pela pelo por que se sem seu sua são também te tem um uma você à é"""

DUTCH = """aan al als bij dat de der deze die dit door een en er had heb hebben heeft het
    hij hoe ik in is je kan maar me men met mij na naar niet nog nu of om onder ons ook op
    over te tot uit van voor was wat we wel wie wij worden wordt zal ze zich zij zijn zo"""

LISTS = {
    "english": ENGLISH, "porter": ENGLISH, "french": FRENCH, "german": GERMAN, "spanish": SPANISH,
    "italian": ITALIAN, "portuguese": PORTUGUESE, "dutch": DUTCH, "dutch_porter": DUTCH,
}
STOPWORDS = {language: frozenset(words.split()) for language, words in LISTS.items()}
