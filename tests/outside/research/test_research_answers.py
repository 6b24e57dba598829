"""How the research pipeline reads a small model's answers: JSON asked for, read leniently."""

from __future__ import annotations

from fable_core.outside.research.pipeline import Section, outline_from, queries_from


def test_queries_are_read_from_json_a_list_or_lines_and_fall_back_to_the_question() -> None:
    assert queries_from('Sure! {"queries": ["a b c", "A  B C", "def", 1234]} hope it helps', "q?") == [
        "a b c", "def", "1234"]
    assert queries_from('["one query", "two query"]', "q?") == ["one query", "two query"]
    assert queries_from("Here are queries:\n1. first one\n- second one\n* third one\n", "q?") == [
        "first one", "second one", "third one"]
    assert queries_from("", "Why does bread rise?") == ["Why does bread rise?"]
    assert len(queries_from("\n".join(f"query {n}" for n in range(9)), "q?")) == 5


def test_an_outline_is_2_to_8_sections_with_unique_titles_and_known_sources() -> None:
    found = outline_from('```json\n{"sections": [{"title": "## Yeast [[x]]", "focus": "gas", "sources": [1, 9, "2"]},'
                         '{"title": "yeast x"}, {"title": "Acid | taste", "sources": [2]}, {"focus": "no title"}]}```',
                         sources=3)
    assert found == [Section("Yeast x", "gas", [1]), Section("Acid taste", "", [2])]
    assert outline_from('[{"title": "A one"}, {"title": "B two"}]', 2) == [Section("A one"), Section("B two")]
    assert len(outline_from('{"sections": [' + ",".join(f'{{"title": "S{n}"}}' for n in range(12)) + "]}", 1)) == 8
    for no_outline in ("I would write about yeast.", '{"sections": [{"title": "Only one"}]}', '{"sections": 3}',
                       "{not json}", ""):
        assert outline_from(no_outline, 2) is None, no_outline
