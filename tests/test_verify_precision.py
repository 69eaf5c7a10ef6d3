"""Red marks you can trust (issue 31): a contradiction only where the passage gives another value
or the opposite for the same thing the claim is about; what is not a value is never compared; a
name is the same name however its letters are written; every verdict says what it compared."""

from __future__ import annotations

from episteme.query.verify import (
    CONTRADICTED,
    SUPPORTED,
    UNSUPPORTED,
    Verifier,
    entity_key,
    numbers_in,
)


def verdict(claim: str, *texts: str, **kw) -> dict:
    return Verifier(**kw).verify(claim, [{"text": t, "score": 1.0, "paper": "p"} for t in texts])


def values(text: str) -> list[str]:
    return [n.text for n in numbers_in(text, evidence=True) if n.lo is None]


def test_citation_years_are_no_values():
    """An author-year citation names a paper: its year is never read as a value, in a passage
    or in a claim; a year stated as such ("released in 2017") still is one."""
    assert values("as shown by (Smith et al., 2017), the model reaches 25 points") == ["25"]
    assert values("(Lee and Kim 2019a; Wu, 2020) train it for 3 epochs") == ["3"]
    assert values("Rocktäschel et al. (2016) report 77.6% accuracy") == ["77.6%"]
    assert "2017" in values("the corpus was released in 2017 with 5 splits")
    assert [n.text for n in numbers_in("Rocktäschel et al. (2016) used 3 layers")] == ["3"]


def test_margin_line_numbers_are_no_values():
    """A preprint's margin line numbers, counting up through the passage a line apart, are not
    values of the prose (the claim's 5 was once compared with a passage's line number 618)."""
    text = ("617 The cells were grown for 5 days in the standard medium and then moved to the plates "
            "618 where the second treatment of 24 hours began, after which the samples were read "
            "619 by the instrument and every reading was stored for the later analysis of the data.")
    assert values(text) == ["5", "24"]
    # a few counts in prose are not a sequence of line numbers
    assert values("We used 3 seeds, then 4 more, and finally 5 runs of the baseline.") == ["3", "4", "5"]


def test_a_year_in_a_name_is_not_a_value():
    """The "14" of WMT'14 is the year 2014, never the value 14."""
    nums = numbers_in("On WMT'14 the model reaches 28.4 BLEU", evidence=True)
    assert all(14.0 not in n.values for n in nums)
    assert any(2014.0 in n.values for n in nums)


def test_names_match_across_accents_and_unicode_forms():
    from episteme.query.text import fold

    assert fold("Rocktäschel") == "Rocktaschel" and fold("Müller") == "Muller"
    assert entity_key("Rocktäschel") == entity_key("Rocktaschel") == entity_key("ROCKTASCHEL")
    passage = ("Rocktaschel et al. read the premise with an LSTM and attend over its states when "
               "reading the hypothesis, reaching 83.5 percent accuracy on the SNLI test set.")
    v = verdict("Rocktäschel et al. attend over the premise states when reading the hypothesis.", passage)
    assert v["verdict"] == SUPPORTED, v["reason"]


def test_a_citation_year_never_contradicts_a_value():
    """The claim's 25 against a passage whose only other number is a citation year: no red
    mark (the year is not a value at all)."""
    passage = ("The encoder has 6 layers (Vaswani et al., 2017) and the decoder has 6 layers as well, "
               "each with residual connections around its attention and feed-forward blocks.")
    v = verdict("The encoder has 25 layers and the decoder has 6 layers.", passage)
    assert v["verdict"] != CONTRADICTED, v["reason"]


def test_a_value_of_another_quantity_is_a_check_not_a_red_mark():
    """The passage's other number stands near other words (a sample count, not the claim's
    number of days): the alignment is uncertain, so the verdict is unsupported with ``check``
    and says what it compared; the same passage giving the days another value contradicts."""
    claim = "The cells were grown for 5 days before the treatment started."
    other_quantity = ("The cells were grown before the treatment started, and 618 samples of "
                      "them were analysed by flow cytometry.")
    v = verdict(claim, other_quantity)
    assert v["verdict"] == UNSUPPORTED and v.get("check") is True, v
    assert v["compared"] == {"claim": "5", "evidence": "618"}
    assert "check this" in v["reason"]["text"]
    same_quantity = "The cells were grown for 7 days before the treatment started."
    v = verdict(claim, same_quantity)
    assert v["verdict"] == CONTRADICTED and not v.get("check"), v
    assert v["compared"] == {"claim": "5", "evidence": "7"}


def test_an_unaligned_number_looks_for_its_place_in_another_passage():
    """The best passage's only other number is an index ("z (1)"); another passage of the same
    paper states the claim's quantity with another value: that passage is the evidence, and
    the claim is contradicted there."""
    claim = "In the experiments, the discriminator was updated k = 5 times per generator update."
    algorithm = ("In the experiments the discriminator is updated by ascending its gradient before "
                 "each generator update. Sample a minibatch of m noise samples {z (1), ..., z (m)} "
                 "from the noise prior pg(z).")
    body = "The number of discriminator steps k per generator update is a hyperparameter: we used k = 1."
    v = Verifier().verify(claim, [{"text": algorithm, "score": 0.9, "paper": "gan"},
                                  {"text": body, "score": 0.6, "paper": "gan"}])
    assert v["verdict"] == CONTRADICTED and v["evidence"] == 1, v
    assert v["compared"] == {"claim": "5", "evidence": "1"}


def test_every_verdict_says_what_it_compared():
    passage = "The base model has 6 layers and was trained for 100,000 steps on 8 GPUs."
    sup = verdict("The base model was trained for 100,000 steps.", passage)
    assert sup["verdict"] == SUPPORTED and sup["compared"]["claim"]
    absent = verdict("The base model was trained for 300,000 steps on 8 GPUs.", passage)
    assert absent["compared"]["claim"] == "300,000"
    neg = verdict("The base model was not trained on GPUs.", passage)
    assert "compared" in neg


def test_an_alternative_the_passage_used_is_a_contradiction():
    """ "A instead of B" where the passage states B and nowhere A: the paper did what the claim
    says it did not (a made-up claim with no number in it once passed as supported)."""
    passage = ("The encoder is a bidirectional RNN that reads the source sentence in both directions, "
               "so that each annotation summarises the words before and after it.")
    v = verdict("The encoder is a convolutional network instead of a bidirectional RNN.", passage)
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "alternative_swapped", v
    assert v["compared"]["claim"] == "convolutional network instead of bidirectional RNN"
    ok = verdict("The encoder is a bidirectional RNN instead of a convolutional network.", passage)
    assert ok["verdict"] != CONTRADICTED, ok
    # a passage that itself sets B against A says nothing against the claim
    replaced = ("We replace the bidirectional RNN of the encoder by a stack of convolutions that "
                "reads the source sentence in both directions.")
    v = verdict("The encoder is a convolutional network instead of a bidirectional RNN.", replaced)
    assert v["verdict"] != CONTRADICTED, v


def test_the_wrong_one_of_two_settings_is_a_contradiction():
    """The value belongs to the base model, not the big one: a sentence says the rest of the
    claim (its words and its number) for the other setting, and none says it for the claim's."""
    base = "We trained the base models for a total of 100,000 steps or 12 hours on eight GPUs."
    big = "The big models were trained for 300,000 steps (3.5 days) on the same machine."
    v = Verifier().verify("The big models were trained for 100,000 steps.",
                          [{"text": base, "score": 0.9, "paper": "p"}, {"text": big, "score": 0.8, "paper": "p"}])
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "setting_swapped", v
    assert v["compared"] == {"claim": "big", "evidence": "base"}
    ok = Verifier().verify("The base models were trained for 100,000 steps.",
                           [{"text": base, "score": 0.9, "paper": "p"}, {"text": big, "score": 0.8, "paper": "p"}])
    assert ok["verdict"] == SUPPORTED, ok


def test_a_value_paired_with_another_name_in_the_passage_own_words():
    """ "0.25% for LoRA, 0.28% for DoRA": a claim giving LoRA 0.28% swapped the value (both
    pairings read from the texts' own "V for L" wording); the true claim stays supported."""
    passage = ("The methods update few weights: 0.25% for LoRA, 0.28% for DoRA, 0.12% for IA3 and "
               "0.5% for Prefix tuning of the model parameters.")
    tail = " of the model parameters, compared with 0.12% for IA3 and 0.5% for prefix tuning."
    v = verdict("LoRA updates 0.28%" + tail, passage)
    assert v["verdict"] == CONTRADICTED and v["reason"]["code"] == "value_of_other", v
    assert verdict("LoRA updates 0.25%" + tail, passage)["verdict"] == SUPPORTED


def test_a_tables_language_pair_is_read_with_its_own_direction():
    """Lower-case code pairs as NMT tables print them ("sw-en", "tl-en") and languages beyond the
    first list (Swahili, Tagalog) are pairs with a direction; a code that is an English word in
    lower case ("to-do", "no-go") is not."""
    from episteme.query.verify import lang_pair

    assert lang_pair("sw-en") == ("sw", "en") and lang_pair("en-sw") == ("en", "sw")
    assert lang_pair("Tagalog-English") == lang_pair("tl-en") == ("tl", "en")
    assert lang_pair("to-do") is None and lang_pair("no-go") is None
    assert entity_key("Swahili-to-English") == entity_key("sw-en") != entity_key("en-sw")


def test_a_reason_reads_the_same_in_every_process():
    """The roles-swapped reason names the claim's first swapped word, whatever the string hash
    seed (it once followed a set's order, so two runs of the same trace printed two reasons)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("from episteme.query.verify.polarity import role_swap; print(role_swap("
            "'The generator uses maxout units and the discriminator uses rectifier units.', "
            "'The generator nets used rectifier activations and the discriminator net used maxout "
            "activations.'))")
    plugin = str(Path(__file__).resolve().parent.parent / "plugin")
    got = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": plugin}).stdout
           for seed in (1, 2, 3, 4)}
    assert got == {"the claim ties maxout to generator; the passage ties it to discriminator\n"}
