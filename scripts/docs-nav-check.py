#!/usr/bin/env python3
"""Fails when a page under docs/ is missing from mkdocs.yml's nav, the nav
names a page that does not exist, or README.md links to a file that does not
exist (mkdocs checks the links of docs/ only). mkdocs 1.4 only logs the first
at INFO, even with --strict; `make docs` runs this before building."""
import os
import re
import sys

import yaml


def nav_pages(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from nav_pages(item)
    elif isinstance(node, dict):
        for value in node.values():
            yield from nav_pages(value)


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    with open(os.path.join(root, "mkdocs.yml"), encoding="utf-8") as f:
        config = yaml.safe_load(f)
    docs_dir = os.path.join(root, config.get("docs_dir", "docs"))
    in_nav = {p for p in nav_pages(config.get("nav", [])) if "://" not in p}
    on_disk = set()
    for dirpath, _, files in os.walk(docs_dir):
        for name in files:
            if name.endswith(".md"):
                on_disk.add(os.path.relpath(os.path.join(dirpath, name), docs_dir).replace(os.sep, "/"))
    problems = []
    for page in sorted(on_disk - in_nav):
        problems.append(f"docs/{page} is not in mkdocs.yml's nav: add it there")
    for page in sorted(in_nav - on_disk):
        problems.append(f"mkdocs.yml's nav names docs/{page}, which does not exist")
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if "://" not in target and not os.path.exists(os.path.join(root, target)):
            problems.append(f"README.md links to {target}, which does not exist")
    for p in problems:
        print("docs-nav-check:", p, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"docs-nav-check: all {len(on_disk)} pages under docs/ are in the nav; README.md's links resolve")


if __name__ == "__main__":
    main()
