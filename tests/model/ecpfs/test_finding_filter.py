"""The findings filter's grammar: words keep, -CODE hides (read as `check --ignore` reads a code)."""

from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.finding_filter import parse_finding_filter


def test_minus_code_hides_that_code_in_every_spelling() -> None:
    for spelling in ("-W005", "-w005", "-ECPFS-W005", "-ecpfs-w005"):
        f = parse_finding_filter(spelling)
        assert f.hidden_codes == ("ECPFS-W005",)
        assert not f.matches("lvl_1/node_0", "ECPFS-W005", "anything")
        assert f.matches("lvl_1/node_0", "ECPFS-E012", "anything")


def test_words_must_all_appear_in_path_code_or_message() -> None:
    f = parse_finding_filter("node_3 IDS")
    assert f.matches("lvl_2/node_3", "ECPFS-E041", "has embeddings but no ids array")
    assert not f.matches("lvl_2/node_4", "ECPFS-E041", "has embeddings but no ids array")
    assert parse_finding_filter("e041").matches("lvl_2/node_4", "ECPFS-E041", "x")


def test_a_minus_word_that_is_no_code_is_reported_not_taken_as_text() -> None:
    f = parse_finding_filter("-W999 -E012,W005")
    assert f.unknown_codes == ("W999",)
    assert f.hidden_codes == ("ECPFS-E012", "ECPFS-W005")
    assert f.active


def test_the_cli_and_the_filter_read_codes_alike() -> None:
    assert fc.normalise_code("w005") == "ECPFS-W005"
    assert fc.normalise_code("W999") is None
