#!/usr/bin/env python3
"""Style checks of the documentation, cheap enough for every test run.

  check-docs.py references SOURCE_ROOT
      No file under src/ docs/ tests/ bench/ man/ contrib/ or README.md cites a
      document that is not in the repository (the product specification by
      section, or the shared folder beside the repository), and
      docs/BENCHMARKS.md stays a reference of at most 300 lines.

  check-docs.py links SOURCE_ROOT
      Every relative link in README.md and docs/**/*.md names a file that
      exists, and every docs/<page>.md named in src/ tests/ bench/ man/
      contrib/ meson.build exists (a page moved without its references fails).

Exits 0 when all hold, 1 with one line per problem otherwise."""

import os
import re
import sys

TREES = ["src", "docs", "tests", "bench", "man", "contrib"]
FILES = ["README.md", "meson.build", "meson_options.txt"]
SKIP_DIRS = {".git", "results", "corpus", "__pycache__"}
BENCHMARKS_MAX_LINES = 300

# Built from parts so that this file does not match itself: the product
# specification by name (any section, its file name, "its rules") and the
# shared folder beside the repository. Identifiers such as FOO_SPEC_X pass.
FORBIDDEN = [
    ("the specification", re.compile(r"\b" + "SP" + r"EC\b")),
    ("the shared folder", re.compile(re.escape(".." + "/shared"))),
]


def text_files(root, trees, files):
    for name in files:
        path = os.path.join(root, name)
        if os.path.isfile(path):
            yield name
    for tree in trees:
        top = os.path.join(root, tree)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in sorted(filenames):
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                yield rel


def read_text(root, rel):
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, OSError):
        return None


def check_references(root):
    problems = []
    for rel in text_files(root, TREES, FILES):
        text = read_text(root, rel)
        if text is None:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            for what, pattern in FORBIDDEN:
                if pattern.search(line):
                    problems.append(f"{rel}:{lineno}: cites {what}, a document "
                                    "outside the repository; name the page in docs/ "
                                    "that holds the fact")
    bench = read_text(root, "docs/BENCHMARKS.md")
    if bench is None:
        problems.append("docs/BENCHMARKS.md: missing")
    else:
        n = len(bench.splitlines())
        if n > BENCHMARKS_MAX_LINES:
            problems.append(f"docs/BENCHMARKS.md: {n} lines, more than "
                            f"{BENCHMARKS_MAX_LINES}: it is a reference, not a notebook "
                            "(what was learned goes to docs/internals/design-decisions.md)")
    return problems


# [text](target) and [text](target "title"); images too. Code spans are
# removed first, so `[a](b)` in backquotes is not a link.
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"`[^`\n]*`")
DOC_MENTION = re.compile(r"(?<![\w./-])docs/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md\b")


def markdown_files(root):
    if os.path.isfile(os.path.join(root, "README.md")):
        yield "README.md"
    for rel in text_files(root, ["docs"], []):
        if rel.endswith(".md"):
            yield rel


def check_links(root):
    problems = []
    for rel in markdown_files(root):
        text = read_text(root, rel)
        if text is None:
            problems.append(f"{rel}: not UTF-8 text")
            continue
        in_fence = False
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            for m in LINK.finditer(CODE_SPAN.sub("", line)):
                target = m.group(1)
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                    continue
                path = target.split("#", 1)[0]
                if path.startswith("/"):
                    problems.append(f"{rel}:{lineno}: link {target!r} is absolute; "
                                    "use a path relative to the page")
                    continue
                resolved = os.path.normpath(os.path.join(os.path.dirname(rel), path))
                if resolved.startswith(".."):
                    problems.append(f"{rel}:{lineno}: link {target!r} leaves the repository")
                elif not os.path.exists(os.path.join(root, resolved)):
                    problems.append(f"{rel}:{lineno}: link {target!r}: {resolved} "
                                    "does not exist")
    for rel in text_files(root, [t for t in TREES if t != "docs"], FILES):
        text = read_text(root, rel)
        if text is None:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            for m in DOC_MENTION.finditer(line):
                if not os.path.isfile(os.path.join(root, m.group(0))):
                    problems.append(f"{rel}:{lineno}: names {m.group(0)}, which "
                                    "does not exist")
    return problems


def main(argv):
    if len(argv) != 3 or argv[1] not in ("references", "links"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[2]
    problems = check_references(root) if argv[1] == "references" else check_links(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
