"""A figure that is a word ("fits", "does not fit") is pasted into a Chinese page as a Chinese
word (tools/editions.py's GLUED_WORDS, the words file's "glued_words"): next to other Chinese it
takes no space on either side, as Chinese words do not (locales/zh_CN/STYLE.md: the space goes
between Chinese and Latin letters or digits). "在 24 GB 中{fig}`x`" reads 在 24 GB 中放不下, where
"中 {fig}`x`" would read 中 放不下."""

from __future__ import annotations

import re
from pathlib import Path

from babel.messages.pofile import read_po

from gpulab.course.figures import all_figures
from tools import editions

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = ROOT / "locales" / "zh_CN" / "LC_MESSAGES"
CHINESE = r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef“”]"  # Hanzi and full-width punctuation
FIG = re.compile(r"\{fig\}`([A-Za-z0-9_]+)(?::[^`]*)?`")


def _chinese_words() -> set[str]:
    """The figures that the Chinese edition pastes as Chinese words (an oracle of their own:
    the words file's renderings, which carry Hanzi)."""
    return {
        name
        for name, value in all_figures().items()
        if isinstance(value, str) and re.search(CHINESE, editions.glued_text(value, "zh_CN"))
    }


def stray_spaces(msgstr: str, words: set[str]) -> list[str]:
    """Each pasted Chinese word of `msgstr` with a space between it and Chinese beside it."""
    found = []
    for match in FIG.finditer(msgstr):
        if match.group(1) not in words:
            continue
        before, after = msgstr[: match.start()], msgstr[match.end() :]
        if re.search(CHINESE + r" $", before) or re.match(" " + CHINESE, after):
            found.append(msgstr[max(0, match.start() - 12) : match.end() + 4])
    return found


def test_the_check_finds_a_space_beside_a_pasted_chinese_word():
    words = {"fits_here"}
    assert stray_spaces("在 24 GB 中 {fig}`fits_here`。", words)
    assert stray_spaces("所以两张卡{fig}`fits_here` 。", words)
    assert not stray_spaces("在 24 GB 中{fig}`fits_here`。", words)
    assert not stray_spaces("RTX 4090 {fig}`fits_here`", words)  # Latin beside: a space
    assert not stray_spaces("显存为 {fig}`other` GB", words)  # a number takes its spaces


def test_the_figures_pasted_as_chinese_words_take_no_space_beside_chinese():
    words = _chinese_words()
    assert {"tier70_plain4_in_rtx4090", "company30_a10_fits"} <= words
    found = []
    for path in sorted(CATALOGUES.rglob("*.po")):
        with path.open("rb") as f:
            for message in read_po(f):
                if message.id and isinstance(message.string, str):
                    for where in stray_spaces(message.string, words):
                        found.append(f"{path.relative_to(CATALOGUES)}: {where}")
    assert not found, "\n".join(found)
