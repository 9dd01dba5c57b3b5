"""Rename figures where the pages paste them, in the pages and in their translations at once.

A figure's name appears in a page's ``{fig}`` roles and, as written there, in the msgid and the
msgstr of every catalogue entry that holds it; renaming it in the page alone would leave the
translation behind (its msgid would no longer match, and the Chinese edition would fall back
to English). This tool rewrites both, so that no translation is lost:

    python tools/authoring/rename_figures.py OLD=NEW [OLD=NEW ...]
    python tools/authoring/rename_figures.py --from-glue  # myst-nb's path-form glue roles -> {fig}

The figure itself is renamed in its ``gpulab.course.figures_ch0N`` module by hand (its keys
are often built in code); ``tools/checks/page_figures.py`` then names any reference left unresolved.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "book"
CATALOGUES = ROOT / "locales"
FIG_ROLE = re.compile(r"\{fig\}`(?P<name>[a-z][a-z0-9_]*)(?P<spec>:[^`]*)?`")
GLUE_ROLE = re.compile(r"\{glue:text\}`(?P<path>[^`:]+)::(?P<key>\w+):(?P<spec>[^`]*)`")
# Names that two chapters' figures gave different values: one of each pair is renamed when the
# pages move from per-notebook glue to {fig}'s one namespace (gpulab.course.figures_ch0N too).
GLUE_RENAMES = {
    ("02_will_it_fit", "prompt_tokens"): "logits_prompt_tokens",  # 8,192: the logits example
    ("03_inference_vs_training", "prompt_tokens"): "prefill_prompt_tokens",  # 4,096
    ("06_choosing_hardware", "prompt_tokens"): "cpu_check_prompt_tokens",  # 2,000
    # chapter 2's bound keeps a 4K KV cache; chapter 3's reads the weights alone
    ("02_will_it_fit", "llama70_q4km_rtx4090_bound_tok_s"): "llama70_q4km_4k_rtx4090_bound_tok_s",
    # chapter 4's times are of the bytes read per token, chapter 2's of the weights held
    ("04_backends", "offload_gpu_ms"): "offload_gpu_read_ms",
    ("04_backends", "offload_cpu_ms"): "offload_cpu_read_ms",
}


def files() -> list[Path]:
    """The pages and the catalogues that may hold figure roles."""
    return sorted(PAGES.rglob("*.md")) + sorted(CATALOGUES.rglob("*.po"))


def rename_roles(text: str, renames: dict[str, str]) -> str:
    """The text with every {fig} role whose name is a key of `renames` renamed."""
    return FIG_ROLE.sub(lambda m: f"{{fig}}`{renames.get(m['name'], m['name'])}{m['spec'] or ''}`",
                        text)


def glue_to_fig(text: str, values: dict) -> str:
    """The text with myst-nb's path-form glue roles rewritten as {fig} roles: the notebook's
    path goes, a name two chapters share with different values is renamed (GLUE_RENAMES), and
    the spec goes where it changes nothing (an int's `d`, a str's `s`)."""
    def fig(m: re.Match) -> str:
        name = GLUE_RENAMES.get((Path(m["path"]).stem, m["key"]), m["key"])
        value, spec = values[name], m["spec"]
        plain = (spec == "d" and type(value) is int) or (spec == "s" and type(value) is str)
        return f"{{fig}}`{name}`" if plain else f"{{fig}}`{name}:{spec}`"

    return GLUE_ROLE.sub(fig, text)


def rewrite(convert: Callable[[str], str]) -> list[Path]:
    """Apply `convert` to every page and catalogue; the files it changed."""
    changed = []
    for path in files():
        text = path.read_text(encoding="utf-8")
        new = convert(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    """Rename figures (OLD=NEW ...), or move the pages from glue roles to {fig} (--from-glue)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("renames", nargs="*", metavar="OLD=NEW")
    parser.add_argument("--from-glue", action="store_true", help="rewrite glue roles as {fig}")
    args = parser.parse_args(argv)
    if args.from_glue:
        from gpulab.course.figures import all_figures

        values = all_figures()
        changed = rewrite(lambda text: glue_to_fig(text, values))
    else:
        pairs = [r.split("=", 1) for r in args.renames]
        if not pairs or any(len(p) != 2 or not all(p) for p in pairs):
            parser.error("give OLD=NEW pairs, such as llama70_gb=llama3_70b_gb")
        changed = rewrite(lambda text: rename_roles(text, dict(pairs)))
    for path in changed:
        print(path.relative_to(ROOT))
    print(f"{len(changed)} files changed")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main())
