"""RULES.md, generated: from an error code to the rule that decides it, and from a call to the rules it meets.

A rule is the function that builds a refusal (``guard.Refusal``) or a forge
error (``forge.ForgeError``); the refusal's ``rule`` is that function's name
(``gitops.rule_at``), and this script finds the same functions in the source.
The calls' part follows the call pipeline (``madtea._run``'s steps) and each
operation's handler, as the registry declares it, through the functions they
call: it lists every rule a call *can* meet, in the order of first meeting, not
only those a given call's arguments reach.

Run ``python release/rules_md.py`` from the repository root to rewrite
RULES.md; ``--check`` exits 1 when RULES.md is not what it would write.
tests/test_rules.py runs the check.
"""
from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["ROOT", "Site", "rule_sites", "tests_naming", "call_rules", "render", "main"]

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("guard.py", "forge.py", "madtea.py")  # where refusals and forge errors are built
_BUILDERS = {"Refusal", "ForgeError"}
_CODE = re.compile(r"[A-Z][A-Z_]+[A-Z]")
_MAX_TESTS = 4

Site = tuple[str, str, str]  # (code, rule, file)
_Key = tuple[str, str]  # (file, function): one function of the call graph


def _children(node: ast.AST, parents: tuple[str, ...]) -> Iterator[tuple[ast.AST, tuple[str, ...]]]:
    """Every node under *node* in source order, with the names of the functions around it."""
    for child in ast.iter_child_nodes(node):
        yield child, parents
        inner = (*parents, child.name) if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else parents
        yield from _children(child, inner)


def _called(call: ast.Call) -> str | None:
    return call.func.id if isinstance(call.func, ast.Name) else \
        call.func.attr if isinstance(call.func, ast.Attribute) else None


def _codes(expr: ast.expr | None) -> list[str]:
    """The codes an expression can be: a constant, or either side of a conditional."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str) and _CODE.fullmatch(expr.value):
        return [expr.value]
    if isinstance(expr, ast.IfExp):
        return _codes(expr.body) + _codes(expr.orelse)
    return []


def rule_sites(root: Path = ROOT) -> list[Site]:
    """Each (code, rule, file) a refusal or forge error is built with; a refusal carried on keeps its own."""
    sites: list[Site] = []
    for name in MODULES:
        tree = ast.parse((root / name).read_text(encoding="utf-8"))
        functions = {node.name: node for node, _ in _children(tree, ()) if isinstance(node, ast.FunctionDef)}
        for node, parents in _children(tree, ()):
            if not (isinstance(node, ast.Call) and _called(node) in _BUILDERS and parents):
                continue
            given = next((k.value for k in node.keywords if k.arg == "rule"), None)
            if isinstance(given, ast.Attribute):
                continue  # rule=carried.rule: the refusal it carries names its rule
            rule = given.value if isinstance(given, ast.Constant) else parents[-1]
            codes = _codes(node.args[0] if node.args else None)
            if not codes and rule in functions:  # a code passed in: the codes its function names in its calls
                codes = sorted({c for n, _ in _children(functions[rule], ()) if isinstance(n, ast.Call)
                                for c in _codes(n.args[0] if n.args else None)})
            sites += [(code, str(rule), name) for code in codes]
    return sorted(set(sites))


def tests_naming(rules: set[str], root: Path = ROOT) -> dict[str, list[str]]:
    """For each rule, the tests whose body names its function (a call, an attribute or a string)."""
    found: dict[str, list[str]] = {rule: [] for rule in rules}
    for path in sorted((root / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
                {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)} | \
                {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            for rule in rules & names:
                found[rule].append(f"{path.name}::{node.name}")
    return found


class _Graph:
    """Who calls whom among the module-level functions of guard, forge, gitops and madtea, in source order.

    A method call is not followed (the receiver's type is not in the source): the forge requests a handler
    sends through its client meet the rules of ``forge.request``, listed once for all of them.
    """

    def __init__(self, root: Path) -> None:
        self.bodies: dict[_Key, ast.AST] = {}
        for name in (*MODULES, "gitops.py"):
            tree = ast.parse((root / name).read_text(encoding="utf-8"))
            self.bodies.update({(name, node.name): node for node in tree.body if isinstance(node, ast.FunctionDef)})

    def callees(self, key: _Key, kind: str | None = None) -> Iterator[_Key]:
        """The functions *key* calls, in source order; an ``if`` on the operation's kind takes *kind*'s branch."""
        module = key[0]
        for node in self._walk(self.bodies[key], kind):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and (module, func.id) in self.bodies:
                yield module, func.id
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                    (f"{func.value.id}.py", func.attr) in self.bodies:
                yield f"{func.value.id}.py", func.attr

    def _walk(self, node: ast.AST, kind: str | None) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and kind and ast.unparse(child.test).endswith(".kind == 'local'"):
                for part in child.body if kind == "local" else child.orelse:
                    yield part
                    yield from self._walk(part, kind)
                continue
            yield child
            yield from self._walk(child, kind)


def call_rules(graph: _Graph, start: _Key, rules: set[str], seen: set[_Key], kind: str | None = None) -> list[str]:
    """The rules reachable from *start*, in the order a depth-first walk of its calls first meets them."""
    found: list[str] = []
    stack = [iter([start])]
    while stack:
        key = next(stack[-1], None)
        if key is None:
            stack.pop()
            continue
        if key in seen:
            continue
        seen.add(key)
        if key[1] in rules:
            found.append(key[1])
        stack.append(graph.callees(key, kind))
    return found


def _pipeline(graph: _Graph) -> list[str]:
    """The steps ``madtea._run`` takes, in order: the functions it calls."""
    return [name for _, name in graph.callees(("madtea.py", "_run")) if name.startswith("_step_")]


def render(root: Path = ROOT) -> str:
    sys.path.insert(0, str(root))
    try:
        import madtea
    finally:
        sys.path.pop(0)
    sites = rule_sites(root)
    rules = {rule for _, rule, _ in sites}
    tests = tests_naming(rules, root)
    out = ["# Rules", "",
           "Generated by `python release/rules_md.py` from the source; a test fails when this file is not what it",
           "would write. Every refusal names its rule (`rule` in the MCP result's structured content and in",
           "`--json` errors): the function that built it.", "",
           "## From a code to its rule", "",
           "| code | rule | in | tests that name the rule |", "|---|---|---|---|"]
    for code, rule, file in sites:
        named = tests[rule]
        shown = ", ".join(f"`{t}`" for t in named[:_MAX_TESTS]) + \
            (f" and {len(named) - _MAX_TESTS} more" if len(named) > _MAX_TESTS else "") if named else "none by name"
        out.append(f"| `{code}` | `{rule}` | {file} | {shown} |")
    out += ["", "`GIT_ERROR` (a git failure no rule foresaw) and `INTERNAL_ERROR` (a bug) carry no rule:",
            "`madtea.run_error` maps them.", ""]
    graph = _Graph(root)
    steps = _pipeline(graph)
    out += ["## From a call to the rules it meets", "",
            "A call takes the pipeline's steps in this order: " + ", ".join(f"`{s}`" for s in steps) + ".",
            "Each line lists the rules a step can apply, in the order it first meets them; the handler's own",
            "rules and the failures mapped after it follow, per tool and action.", ""]
    for step in [s for s in steps if s != "_step_handler"]:
        for kind in ("local", "remote"):
            found = call_rules(graph, ("madtea.py", step), rules, set(), kind)
            out.append(f"- {kind} calls, `{step}`: {_listed(found)}")
    requests = call_rules(graph, ("forge.py", "request"), rules, set())
    out.append(f"- every forge request, `forge.request`: {_listed(requests)}")
    failures = [key for key in graph.callees(("madtea.py", "_step_handler")) if key[0] == "madtea.py"]
    out += ["", "| call | handler | its rules | failures mapped after it |", "|---|---|---|---|"]
    for op in sorted(madtea.REGISTRY, key=lambda o: (o.tool, o.action or "")):
        own = call_rules(graph, ("madtea.py", op.handler.__name__), rules, set(), op.kind)
        seen: set[_Key] = set()
        mapped = [r for key in failures for r in call_rules(graph, key, rules, seen, op.kind)]
        out.append(f"| `{op.where}` | `{op.handler.__name__}` | {_listed(own)} | {_listed(mapped)} |")
    return "\n".join(out) + "\n"


def _listed(rules: list[str]) -> str:
    return ", ".join(f"`{r}`" for r in rules) if rules else "none"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = render()
    path = ROOT / "RULES.md"
    if "--check" in args:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print("RULES.md is stale: run python release/rules_md.py", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
