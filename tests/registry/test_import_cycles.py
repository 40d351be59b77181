"""moot's top-level packages import each other in one direction only: a circle between two of them (each
reaching into the other at run time) would make the layers meaningless and one of them unusable alone."""

from __future__ import annotations

import grimp


def _package(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_no_two_top_level_packages_import_each_other() -> None:
    graph = grimp.build_graph("moot", exclude_type_checking_imports=True)
    edges: dict[tuple[str, str], tuple[str, str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            pair = (_package(module), _package(imported))
            if pair[0] != pair[1]:
                edges.setdefault(pair, (module, imported))
    circles = [(edges[(a, b)], edges[(b, a)]) for (a, b) in edges if (b, a) in edges and a < b]
    assert circles == []


def test_no_module_imports_itself_through_others() -> None:
    # Imports inside functions count: one that hides a circle still makes two modules unusable apart.
    graph = grimp.build_graph("moot", exclude_type_checking_imports=True)
    circles = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None:
                circles.append((module, *back))
    assert circles == []
