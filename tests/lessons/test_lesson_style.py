"""The translated lessons keep one voice per language (the style sheets in lessons/GLOSSARY.md),
no kernel: the words a review found drifting have one survivor each; a sentence that names the
hint line uses the label that language prints (the catalog's msgstr); common words are not
glossed and a term is glossed once per lesson, outside the bold; and in Chinese and Korean no
space pads the bold, which still renders. Each check is a function of a language's lessons (a
name → markdown texts mapping), so it can be run on any version of them."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import nbformat
import pytest
from lesson_tools import LESSONS, ROOT, lesson_path

NAMES = sorted(p.name for p in LESSONS.glob("[0-9][0-9]_*.ipynb"))
Lessons = dict[str, list[str]]          # lesson file name -> its markdown cells' sources

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]+`")
HAN = "\u3400-\u9fff\uac00-\ud7af"                       # Chinese characters and Hangul
CJK = HAN + "\u3000-\u303f\uff00-\uffef"                 # ... and their punctuation
BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")

# (pattern, what it is): words that must not appear in a language's lesson prose.
DRIFT: dict[str, list[tuple[str, str]]] = {
    "ko": [(r"업데이트", "update is 갱신"), (r"에러", "error is 오류"),
           (r"오래됨", "staleness is 지연(staleness)"),
           (r"(초당|스텝당|스텝마다|타워마다) 예제|예제 \**\d|\d+개의 예제|예제를 (하나씩|처리)|모든 예제",
            "a row of data is a 샘플; 예제 is a worked example"),
           (r"^다음 레슨:", "'Next:' is 다음:")],
    "zh": [(r"设备分配", "placement is 设备放置"), (r"真正的 (TensorFlow|`tensorflow)", "real is 真实的"),
           (r"你学到了什么", "'What you learned' is 本课小结"),
           (r"个 ?GPU(?! ?用户)", "GPUs are counted with 块"),
           (r"作业 \(job\) 在真实机器|分布式作业|同样的作业|训练作业", "a training run is 训练, 作业 is a cluster's job")],
    "ru": [(r"Дальше", "'Next' is Далее"), (r"рабоч\w*\s+узл", "worker is воркер"),
           (r"(?<![а-яё])[Пп]акет|микропакет", "batch is батч"),
           (r"задани\w* (обучения|TensorFlow)|распредел\w+ задани|[Тт]о же задание",
            "a training run is обучение, задание is a cluster's job"),
           (r"разделя\w* переменн|переменн\w* разделя", "variables are shared or spread, never split")],
}
# Headings every language writes one way (the English heading -> one translation per language).
SHARED_HEADINGS = ("What you learned", "On real TensorFlow", "Try it on real TensorFlow")
COMMON_WORDS = ("lesson", "exercise", "op", "step", "graph", "device", "session", "tensor",
                "variable", "gradient", "loss", "batch", "notebook", "hint", "Hint", "optimizer")
GLOSS = re.compile(r"\(([A-Za-z][A-Za-z -]*[A-Za-z])\)")
KO_PARTICLE = re.compile(r"(?<=[^\s.!?:])\*\* (을|를|은|는|이|가|로|으로|도|의|에|와|과|만)(?=[\s.,])")


def prose(markdown: str, code: str = "") -> str:
    """A markdown text without fenced blocks, each `code` span replaced by ``code``."""
    return CODE.sub(code, FENCE.sub("", markdown))


def read(lang: str) -> Lessons:
    out = {}
    for name in NAMES:
        path = lesson_path(name, lang)
        if path.is_file():
            cells = nbformat.read(path, as_version=4).cells
            out[name] = [c.source for c in cells if c.cell_type == "markdown"]
    return out


def drift(lang: str, lessons: Lessons) -> Iterator[str]:
    for name, cells in lessons.items():
        for text in map(prose, cells):
            for pattern, rule in DRIFT[lang]:
                for m in re.finditer(pattern, text, re.M):
                    yield f"{name}: {m.group(0)!r} ({rule})"


def heading_variants(lang: str, lessons: Lessons, english: Lessons) -> Iterator[str]:
    for wanted in SHARED_HEADINGS:
        seen = set()
        for name, cells in lessons.items():
            for en, tr_text in zip(english[name], cells, strict=False):
                if re.fullmatch(rf"#+ {wanted}", en.splitlines()[0] if en else ""):
                    seen.add(tr_text.splitlines()[0].lstrip("# "))
        if len(seen) > 1:
            yield f"{wanted!r} is written {sorted(seen)}"


def hint_label(lang: str) -> str:
    """What the hint line starts with in ``lang``: the msgstr of ``Hint: {text}``, read from
    the language's .po file."""
    po = (ROOT / "tfteach" / "locale" / lang / "LC_MESSAGES" / "tfteach.po").read_text("utf-8")
    m = re.search(r'^msgid "Hint: \{text\}"\nmsgstr "(.*)"$', po, re.M)
    assert m, f"no 'Hint: {{text}}' in the {lang} catalog"
    return m.group(1).replace("{text}", "").strip()


def hint_label_mismatches(lang: str, lessons: Lessons, english: Lessons) -> Iterator[str]:
    """Where the English names the printed label (`Hint:` or **Hint**), the translation
    names that language's label in code, and never the English word."""
    label = hint_label(lang)
    for name, cells in lessons.items():
        for en, text in zip(english[name], cells, strict=False):
            if re.search(r"`Hint:`|\*\*Hint\*\*", en):
                if f"`{label}`" not in text or "Hint" in text:
                    yield f"{name}: {text[:60]!r}… names the hint line without `{label}`"


def gloss_problems(lang: str, lessons: Lessons) -> Iterator[str]:
    for name, cells in lessons.items():
        seen: set[str] = set()
        for text in map(prose, cells):
            for m in GLOSS.finditer(text):
                term = m.group(1)
                if term in COMMON_WORDS:
                    yield f"{name}: common word glossed ({term})"
                elif term.lower() in seen:
                    yield f"{name}: ({term}) glossed again"
                seen.add(term.lower())
            for m in re.finditer(r"\(([A-Za-z][A-Za-z -]*)\)\*\*", text):
                yield f"{name}: gloss inside bold ({m.group(1)})"


def _rendered_bold(text: str) -> tuple[int, bool]:
    """How many bold runs ``text`` renders to, and whether a literal ** is left over."""
    markdown_it = pytest.importorskip("markdown_it")
    html = markdown_it.MarkdownIt("commonmark").render(text)
    return html.count("<strong>"), "**" in re.sub(r"<code>.*?</code>", "", html, flags=re.S)


def spacing_problems(lang: str, lessons: Lessons) -> Iterator[str]:
    """A space that pads the bold (or splits Chinese words) where CommonMark needs none, and
    bold that does not render."""
    for name, cells in lessons.items():
        for cell in cells:
            text = prose(cell, code="x")
            if lang == "zh":
                for m in re.finditer(f"[{CJK}] [{CJK}]", text):
                    yield f"{name}: space between Chinese characters {m.group(0)!r}"
                for m in BOLD.finditer(text):
                    a, b, inner = m.start(), m.end(), m.group(1)
                    if text[a - 2:a] and re.fullmatch(f"[{CJK}] ", text[a - 2:a]) and re.match(f"[{HAN}]", inner):
                        yield f"{name}: space before the bold {m.group(0)!r}"
                    if re.fullmatch(f" [{CJK}]", text[b:b + 2]) and re.match(f"[{HAN}]", inner[-1]):
                        yield f"{name}: space after the bold {m.group(0)!r}"
            if lang == "ko":
                for m in KO_PARTICLE.finditer(text):
                    yield f"{name}: space between the bold and its particle {text[m.start() - 8:m.end()]!r}"
            if _rendered_bold(cell)[1]:
                yield f"{name}: a literal ** is left in {cell[:50]!r}"


TRANSLATED = ("ko", "zh", "ru")


def _assert_none(check: Callable[..., Iterator[str]], *args) -> None:
    problems = list(check(*args))
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("lang", TRANSLATED)
def test_the_drifting_words_have_one_survivor(lang):
    _assert_none(drift, lang, read(lang))


@pytest.mark.parametrize("lang", TRANSLATED)
def test_shared_headings_are_written_one_way(lang):
    _assert_none(heading_variants, lang, read(lang), read("en"))


@pytest.mark.parametrize("lang", TRANSLATED)
def test_sentences_about_the_hint_line_use_the_label_the_language_prints(lang):
    _assert_none(hint_label_mismatches, lang, read(lang), read("en"))


@pytest.mark.parametrize("lang", TRANSLATED)
def test_terms_are_glossed_once_per_lesson_and_common_words_never(lang):
    _assert_none(gloss_problems, lang, read(lang))


@pytest.mark.parametrize("lang", ("ko", "zh"))
def test_bold_needs_no_padding_spaces_and_renders(lang):
    _assert_none(spacing_problems, lang, read(lang))


def test_the_spacing_check_sees_a_padded_bold_and_a_broken_one():
    lessons = {"x.ipynb": ["这是 **粗体** 文字", "先写**这个。**然后"]}
    found = list(spacing_problems("zh", lessons))
    assert any("before the bold" in p for p in found) and any("literal **" in p for p in found)
