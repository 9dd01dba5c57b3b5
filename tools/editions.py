"""The course's two editions, English and Chinese, built from one source (docs/design.md).

The Chinese edition is the English pages with their messages translated through Sphinx's
gettext catalogues (``locales/zh_CN/LC_MESSAGES/<page>.po``, kept by ``tools/i18n.py``). Both
editions show the same executed notebooks, so every figure is the same number in both; the
one exception is a notebook whose outputs are text generated in the page's language
(PER_LANGUAGE), which runs once more per edition. The few sentences the pipeline itself adds
to a page (a notebook's machine time, a lab's launch line) are written here in each language,
so that no computed figure passes through a catalogue.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = ("en", "zh_CN")  # the first is the source language, whose site is the root
LOCALES = ROOT / "locales"  # <lang>/LC_MESSAGES/<page>.po
# Notebooks whose outputs are prose generated in the edition's language: the fact-check's
# entries come from the registry, which holds each explanation in both languages.
PER_LANGUAGE = ("book/appendix/fact_check.ipynb",)
TITLES = {"zh_CN": "GPU 加速 AI：动手实践"}

# The pipeline's own sentences, by language; {fields} are filled by tools/pipeline.py.
TEXTS = {
    "en": {
        "machine_time": "**Machine time:** {seconds} to run every cell on the machine that built "
                        "this site ({machine}; {mode}).",
        "mode_quick": "quick mode",
        "mode_full": "full mode",
        "machine": "{model}, {threads} CPU threads, {gpus}",
        "gpus_hidden": "GPUs hidden",
        "device": "device {device}",
        "unknown_machine": "the build machine",
        "do_the_lab": "**Do the lab:** open the exercise, with the parts to write left empty, "
                      "[in Colab]({colab}) or as a {{download}}`notebook to download <{download}>`. "
                      "This page is the lab's solution, run top to bottom.",
    },
    "zh_CN": {
        "machine_time": "**机器耗时：** 在构建本站的机器上运行全部单元格用了 {seconds}"
                        "（{machine}；{mode}）。",
        "mode_quick": "快速模式",
        "mode_full": "完整模式",
        "machine": "{model}，{threads} 个 CPU 线程，{gpus}",
        "gpus_hidden": "GPU 已隐藏",
        "device": "设备 {device}",
        "unknown_machine": "构建本站的机器",
        "do_the_lab": "**动手做实验：** 打开练习版（待你填写的部分留空），可以"
                      "[在 Colab 中打开]({colab})（英文笔记本），或{{download}}`下载笔记本 <{download}>`。"
                      "本页是实验的参考答案，从头到尾运行过一遍。",
    },
}


# The words the chapters' figures glue into pages (gpulab.course.figures_ch0*), as each
# edition says them: (the whole English value as a pattern, its rendering). A value no
# pattern matches (a number, a GPU's name) is pasted as it is.
GLUED_WORDS = {
    "zh_CN": (
        (r"fits", "放得下"), (r"does not fit", "放不下"),
        (r"hold it", "放得下"), (r"does not hold it", "放不下"), (r"do not hold it either", "也放不下"),
        (r"fits in no split", "怎么切分都放不下"),
        (r"yes", "是"), (r"no", "否"), (r"before", "之前"), (r"after", "之后"),
        (r"a cluster of several machines", "多台机器组成的集群"), (r"one eight-GPU server", "一台八卡服务器"),
        # what a power supply is short of, after "不足之处："
        (r"on both counts", "持续功率和峰值功率"), (r"on the sustained load", "持续功率"),
        (r"on the peak load", "峰值功率"), (r"on neither count", "无"),
        (r"carries both", "两项都扛得住"), (r"does not carry both", "扛不住两项"),
        (r"one row per token, (.+)", r"每个 token 一行，\1"),
        (r"(.+) GB, the whole table as gpulab\.perf counts it", r"\1 GB（gpulab.perf 按整张表计）"),
    ),
}


def glued_text(value: str, lang: str) -> str:
    """A glued value as the `lang` edition pastes it: its words translated, else unchanged."""
    import re

    for pattern, rendering in GLUED_WORDS.get(lang, ()):
        match = re.fullmatch(pattern, value)
        if match:
            return match.expand(rendering)
    return value


def text(lang: str, key: str) -> str:
    """One of the pipeline's sentences in `lang` (a KeyError names a missing translation)."""
    if lang not in TEXTS:
        raise ValueError(f"lang={lang!r} is not one of {', '.join(LANGUAGES)}")
    return TEXTS[lang][key]


def source_folder(edition: str) -> str:
    """The staged source tree's folder in a run: site_src, site_src_zh_CN, site_src_gettext."""
    return "site_src" if edition == "en" else f"site_src_{edition}"


def outputs_language(notebook: Path, lang: str) -> str:
    """Which edition's executed copy of `notebook` a `lang` site shows."""
    rel = notebook.resolve().relative_to(ROOT).as_posix()
    return lang if rel in PER_LANGUAGE else "en"


def per_language_runs() -> list[tuple[Path, str]]:
    """The extra executions the other editions need: (notebook, lang)."""
    return [(ROOT / rel, lang) for lang in LANGUAGES[1:] for rel in PER_LANGUAGE]


def configure(config: dict, edition: str, src: Path) -> None:
    """Set a staged `_config.yml` (as a dict) for an edition, copying its catalogues into `src`.

    Every edition extracts and looks up one catalogue per page (gettext_compact off), without
    file locations or ids that would change the catalogues on every build.
    """
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx.update({"gettext_compact": False, "gettext_location": False, "gettext_uuid": False})
    if edition in ("en", "gettext"):
        return
    sphinx["language"] = edition
    # an equation's \text{} labels in Chinese: MathJax's own fonts have no CJK glyphs, so the
    # labels take the page's font (whose stack names the CJK font first in this edition)
    sphinx["mathjax3_config"] = {"chtml": {"mtextInheritFont": True}}
    locales = src / "locales"
    # the catalogues only (STYLE.md would be a page); Sphinx compiles each .mo beside its .po
    shutil.copytree(LOCALES, locales, ignore=shutil.ignore_patterns("*.md"))
    sphinx["locale_dirs"] = [str(locales)]
    config["title"] = TITLES.get(edition, config.get("title"))
