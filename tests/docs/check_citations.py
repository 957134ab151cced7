#!/usr/bin/env python3
"""Fails when a file of the repository cites a path the repository lacks.

A reader who meets a rule "as stated in X" must be able to open X. This
checker reads every tracked file (`git ls-files`) and reports, with file and
line, each citation that leads nowhere:

  - the design notes and specification documents that were never part of
    the repository (their names are built below, so this file does not cite
    them itself), and any path that climbs out of the repository to a
    sibling shared folder;
  - repository paths such as `docs/design/consensus.md`,
    `cluster-scripts/local-cluster.sh` or `node/deploy/rollout.h` (one with
    a `*` must match some file);
  - in Markdown, links `[text](path)`, `[text](#anchor)` and reference
    definitions `[label]: path`;
  - `path.md#anchor` anywhere: the anchor must be a heading of that file,
    by GitHub's slug rule (or an explicit `<a name=...>`/`id=...`).

Left alone: URLs, absolute paths (/etc/..., /usr/...), `#include` lines
(the compiler checks them, and some name generated headers), paths inside
build directories, paths built from variables (`$DIR/x.sh`), paths whose
first folder is not one of ours (RocksDB's `util/crc32c.h`), this file
itself (its self-test plants citations), and any line holding the marker
`citations: ignore`.

Usage:
  check_citations.py [--root DIR]   check DIR (default: this repository)
  check_citations.py --self-test    prove the checker passes a clean tree
                                    and fails a tree with planted citations
Exit status: 0 when nothing dangles, 1 when something does, 2 on misuse.
"""

import argparse
import fnmatch
import os
import re
import subprocess
import sys
import tempfile

IGNORE_MARKER = "citations: ignore"

# Built from parts so that this file does not itself cite them.
DESIGN_NOTES = "DESIGN" + ".md"
SHARED_DIR = "../" + "shared/"

# Files whose text is checked: source, build, script and documentation files.
TEXT_SUFFIXES = (
    ".md", ".txt", ".cc", ".h", ".hpp", ".cpp", ".c", ".cmake", ".sh",
    ".py", ".toml", ".service", ".yml", ".yaml", ".json", ".go", ".in",
)
TEXT_NAMES = ("CMakeLists.txt", "Makefile", ".gitignore")

# Extensions that make a token with a slash a path worth checking.
PATH_EXTENSIONS = (
    "md", "sh", "py", "h", "hpp", "cc", "cpp", "cmake", "toml", "service",
    "txt", "go", "yml", "yaml",
)

URL_RE = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s)>\]\"'`]*")
SPEC_RE = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*spec/0\d\d(?:[\w*-]|\.(?=\w))*")
DESIGN_RE = re.compile(r"(?<![\w.-])(?:[\w.-]+/)*" + re.escape(DESIGN_NOTES) + r"\b")
SHARED_RE = re.compile(re.escape(SHARED_DIR) + r"[\w./*-]*")
# A relative path: at least one directory, a file name with a known
# extension, an optional #anchor. Not preceded by characters that make it part
# of a longer path, a variable or a URL.
PATH_RE = re.compile(
    r"(?<![\w./$}{~@:*<-])"
    r"((?:\.\./|\./)*(?:[\w*-][\w.*-]*/)+[\w*-][\w.*-]*\.(?:" + "|".join(PATH_EXTENSIONS) + r"))"
    r"(#[\w-]+)?(?![\w/-])"
)
# A bare upper-case Markdown file name (README.md, CHANGELOG.md), optionally
# with an anchor; checked only in Markdown files, from the citing file's
# folder up to the root. Lower-case bare names are left alone: `testing.md`
# in prose may mean any folder's.
BARE_MD_RE = re.compile(r"(?<![\w./$}{~@:*<-])([A-Z][A-Z0-9_-]*\.md)(#[\w-]+)?(?![\w/.-])")
MD_LINK_RE = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^()\s>]*(?:\([^()\s]*\)[^()\s>]*)*)>?(?:\s+\"[^\"]*\")?\s*\)")
MD_REF_RE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
EXPLICIT_ANCHOR_RE = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"|\sid=\"([^\"]+)\"")
INCLUDE_RE = re.compile(r"^\s*#\s*include\b")


def github_slug(text):
    """The anchor GitHub gives a heading: markup dropped, lower case,
    punctuation removed (hyphens and underscores stay), spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)                       # inline HTML
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def markdown_anchors(lines):
    """Every anchor a Markdown file defines: its headings' slugs (repeated
    slugs get -1, -2, ... as on GitHub) and explicit HTML anchors."""
    anchors, counts, fenced = set(), {}, False
    for line in lines:
        if FENCE_RE.match(line):
            fenced = not fenced
            continue
        for m in EXPLICIT_ANCHOR_RE.finditer(line):
            anchors.add(m.group(1) or m.group(2))
        if fenced:
            continue
        m = HEADING_RE.match(line)
        if not m:
            continue
        slug = github_slug(m.group(2))
        n = counts.get(slug, 0)
        counts[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


# Folders a citation always means in this repository, even before they exist.
ALWAYS_OURS = ("docs", "spec", "cluster-scripts", "tests", "node")

SKIPPED_TOP_RE = re.compile(r"^(\.git|build[\w.-]*|\.cluster[\w.-]*|\.bench[\w.-]*)$")


def is_skipped(path):
    """Build directories, .git and the scripts' local cluster folders."""
    return bool(SKIPPED_TOP_RE.match(path.split("/", 1)[0]))


def list_files(root, untracked):
    """Tracked files (git ls-files), or every file under root when root is
    not a git work tree. Build directories and .git are skipped."""
    cmd = ["git", "-C", root, "ls-files", "-z", "--cached"]
    if untracked:
        cmd += ["--others", "--exclude-standard"]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True).stdout
        files = [f for f in out.decode("utf-8", "replace").split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            dirnames[:] = [d for d in dirnames
                           if d != ".git" and not (rel_dir == "." and is_skipped(d))
                           and not os.path.exists(os.path.join(dirpath, d, "CMakeCache.txt"))]
            for name in filenames:
                rel = os.path.normpath(os.path.join(rel_dir, name)).replace(os.sep, "/")
                files.append(rel)
    files = [f for f in files if not is_skipped(f) and os.path.isfile(os.path.join(root, f))]
    return sorted(set(files))


def is_text_candidate(path):
    name = os.path.basename(path)
    return name in TEXT_NAMES or path.endswith(TEXT_SUFFIXES)


class Repo:
    def __init__(self, root, files):
        self.root = root
        self.files = set(files)
        self.dirs = set()
        for f in files:
            parts = f.split("/")
            for i in range(1, len(parts)):
                self.dirs.add("/".join(parts[:i]))
        self.top = {f.split("/", 1)[0] for f in files}
        self._anchors = {}

    def read_lines(self, path):
        try:
            with open(os.path.join(self.root, path), "rb") as f:
                data = f.read(2_000_000)
        except OSError:
            return None
        if b"\0" in data:
            return None
        return data.decode("utf-8", "replace").splitlines()

    def anchors(self, path):
        if path not in self._anchors:
            self._anchors[path] = markdown_anchors(self.read_lines(path) or [])
        return self._anchors[path]

    def resolve(self, target, citing_file):
        """The repository file or directory `target` names, cited from
        `citing_file`, or None. Tried relative to the citing file's folder
        and its parents up to the root; a `*` must match some file."""
        target = target.rstrip("/")
        if not target:
            return citing_file
        base = os.path.dirname(citing_file)
        while True:
            cand = os.path.normpath(os.path.join(base, target)).replace(os.sep, "/")
            if not cand.startswith("../") and cand != "..":
                if "*" in cand:
                    hits = sorted(f for f in self.files | self.dirs if fnmatch.fnmatchcase(f, cand))
                    if hits:
                        return hits[0]
                elif cand in self.files or cand in self.dirs:
                    return cand
            if not base:
                return None
            base = os.path.dirname(base)

    def is_ours(self, cited, citing_file):
        """Whether a path in prose names a place in this repository: its
        first folder is a top-level one here (or one every repository of
        ours has), or a folder beside the citing file. `util/crc32c.h` in a
        comment about RocksDB's sources is not ours."""
        first = cited.split("/", 1)[0]
        if first in (".", ".."):
            return True
        if first in ALWAYS_OURS or first in self.top:
            return True
        base = os.path.dirname(citing_file)
        return bool(base) and (base + "/" + first) in self.dirs


def check_file(repo, path):
    """Yields (line number, cited text, why) for every dangling citation."""
    lines = repo.read_lines(path)
    if lines is None:
        return
    is_md = path.endswith(".md")
    fenced = False
    for number, raw in enumerate(lines, 1):
        if IGNORE_MARKER in raw:
            continue
        if is_md and FENCE_RE.match(raw):
            fenced = not fenced
        if INCLUDE_RE.match(raw):
            continue  # the compiler checks includes (some are generated)
        line = URL_RE.sub(" ", raw)
        seen = set()

        def report(text, why):
            if text not in seen:
                seen.add(text)
                return [(number, text, why)]
            return []

        out = []
        for m in DESIGN_RE.finditer(line):
            if repo.resolve(m.group(0), path) is None:
                out += report(m.group(0), "the design notes are not in the repository")
        for m in SPEC_RE.finditer(line):
            if repo.resolve(m.group(0), path) is None:
                out += report(m.group(0), "the specification documents are not in the repository")
        for m in SHARED_RE.finditer(line):
            out += report(m.group(0), "a path outside the repository")

        if is_md and not fenced:
            targets = [m.group(1) for m in MD_LINK_RE.finditer(line)]
            m = MD_REF_RE.match(line)
            if m:
                targets.append(m.group(1))
            for t in targets:
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", t) or t.startswith("/"):
                    continue  # URL, mailto:, absolute path
                out += check_target(repo, path, t, report)

        for m in PATH_RE.finditer(line):
            cited, anchor = m.group(1), m.group(2) or ""
            if cited.startswith(SHARED_DIR) or "spec/0" in cited or cited.endswith(DESIGN_NOTES):
                continue  # reported above
            if cited.split("/", 1)[0] in ("build", "build-asan") or cited.startswith("../build"):
                continue
            if not repo.is_ours(cited, path):
                continue  # another project's path (RocksDB's util/crc32c.h)
            out += check_target(repo, path, cited + anchor, report)
        if is_md:
            for m in BARE_MD_RE.finditer(line):
                cited, anchor = m.group(1), m.group(2) or ""
                if cited == DESIGN_NOTES:
                    continue
                out += check_target(repo, path, cited + anchor, report)
        yield from out


def check_target(repo, citing, target, report):
    file_part, _, anchor = target.partition("#")
    resolved = repo.resolve(file_part, citing) if file_part else citing
    if resolved is None:
        return report(target, "no such file in the repository")
    if anchor and resolved.endswith(".md") and resolved in repo.files:
        if anchor not in repo.anchors(resolved):
            return report(target, f"no heading with anchor #{anchor} in {resolved}")
    return []


def run(root, untracked=False, out=sys.stdout):
    root = os.path.abspath(root)
    files = list_files(root, untracked)
    repo = Repo(root, files)
    found = 0
    myself = os.path.realpath(__file__)
    for path in files:
        if not is_text_candidate(path):
            continue
        if os.path.realpath(os.path.join(root, path)) == myself:
            continue  # its self-test plants citations on purpose
        for number, text, why in check_file(repo, path):
            print(f"{path}:{number}: dangling citation '{text}': {why}", file=out)
            found += 1
    if found:
        print(f"check_citations: {found} dangling citation(s) in {root}", file=out)
        return 1
    print(f"check_citations: {len(files)} files, no dangling citation", file=out)
    return 0


# ---------------------------------------------------------------------------
# Self-test: the checker must pass a tree whose citations all resolve, and
# fail, naming file and line, a tree with one planted citation of each kind.

CLEAN_TREE = {
    "README.md": (
        "# Station\n\n"
        "Read [the design](docs/design/consensus.md), then\n"
        "[leases](docs/design/consensus.md#leases-and-pre-vote) and\n"
        "[the top](#station). Run `cluster-scripts/run.sh`.\n"
        "See https://github.com/etcd-io/raft/blob/main/README.md and\n"
        "/etc/tsnode/tsnode.toml, `$CLUSTER_DIR/tls.env`, `build/tests/x.sh`.\n"
        "```\n# not a heading\n```\n"
    ),
    "docs/design/consensus.md": (
        "# Consensus\n\n## Leases and pre-vote\n\nSee [README](../../README.md).\n"
        "## Leases and pre-vote\n\nA repeated heading.\n"
    ),
    "cluster-scripts/run.sh": "#!/bin/sh\n# see docs/design/consensus.md#leases-and-pre-vote-1\n",
    "node/a.cc": (
        "#include <rocksdb/db.h>\n#include \"node/a.h\"\n"
        "// The rule: docs/design/consensus.md. std::vector<int> v; a.size();\n"
        "// RocksDB's util/crc32c.h and db/log_format.h are not ours.\n"
        "#include \"node/version/version.h\"  // generated in the build tree\n"
        "auto f = [this](const Foo& x) { return x; };\n"
    ),
    "node/a.h": "// see a.cc and node/*.cc\n",
}

PLANTED = {
    "node/b.cc": [
        "// As " + DESIGN_NOTES + " section 3 says.",
        "// The rolling update of spec/" + "002_*.",
        "// Read " + SHARED_DIR + "notes.txt.",
        "// docs/design/" + "nowhere.md states it.",
        "// cluster-scripts/" + "missing.sh runs it.",
        "// docs/design/consensus.md#" + "no-such-heading",
    ],
    "docs/extra.md": [
        "# Extra",
        "[gone](design/" + "gone.md) and [bad anchor](#" + "nothing-here).",
    ],
}


def write_tree(root, tree):
    for rel, text in tree.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def git_track(root):
    """Makes root a git work tree with every file tracked, if git runs;
    otherwise the checker walks the directory."""
    try:
        subprocess.run(["git", "init", "-q", root], check=True, capture_output=True)
        subprocess.run(["git", "-C", root, "add", "-A"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pass


def self_test():
    import io
    failures = []
    with tempfile.TemporaryDirectory(prefix="ts-citations-") as tmp:
        clean = os.path.join(tmp, "clean")
        write_tree(clean, CLEAN_TREE)
        git_track(clean)
        buf = io.StringIO()
        if run(clean, out=buf) != 0:
            failures.append("the clean tree was reported:\n" + buf.getvalue())

        planted = os.path.join(tmp, "planted")
        write_tree(planted, CLEAN_TREE)
        write_tree(planted, {rel: "\n".join(lines) + "\n" for rel, lines in PLANTED.items()})
        git_track(planted)
        buf = io.StringIO()
        status = run(planted, out=buf)
        report = buf.getvalue()
        if status != 1:
            failures.append(f"the planted tree passed (exit {status}):\n" + report)
        expected = [f"node/b.cc:{i}:" for i in range(1, len(PLANTED["node/b.cc"]) + 1)]
        expected += ["docs/extra.md:2: dangling citation 'design/gone.md'",
                     "docs/extra.md:2: dangling citation '#nothing-here'"]
        for e in expected:
            if e not in report:
                failures.append(f"not reported: {e}\n" + report)
        if "README.md" in report or "node/a.cc" in report or "run.sh" in report:
            failures.append("a valid citation was reported:\n" + report)
    if failures:
        print("check_citations self-test FAILED:\n" + "\n".join(failures))
        return 1
    print("check_citations self-test passed: clean tree passes, "
          f"{len(expected)} planted citations reported")
    return 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    parser.add_argument("--untracked", action="store_true",
                        help="also check files git does not track yet (not ignored ones)")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    return run(args.root, args.untracked)


if __name__ == "__main__":
    sys.exit(main())
