"""The type stubs (`python/tiermem/_tiermem.pyi`) against the built native module, and the
config objects (`tiermem.Config`, `Machine`, ...) against the simulator's config schema.

Both fail when the Rust side changes without the Python side following: a function or
argument added, renamed or given another default; a config key added or renamed.
"""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path
from typing import Any, Dict, List, Tuple


import tiermem

STUBS = Path(tiermem.__file__).resolve().parent / "_tiermem.pyi"


def stub_definitions() -> Tuple[Dict[str, List[Tuple[str, Any]]], Dict[str, List[str]], List[str]]:
    """(functions: name -> [(param, default)], classes: name -> bases, attributes)."""
    tree = ast.parse(STUBS.read_text(encoding="utf-8"))
    functions, classes, attributes = {}, {}, []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args
            assert not (args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs), node.name
            defaults = [None] * (len(args.args) - len(args.defaults)) + list(args.defaults)
            functions[node.name] = [
                (a.arg, inspect.Parameter.empty if d is None else ast.literal_eval(d))
                for a, d in zip(args.args, defaults)
            ]
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = [ast.unparse(b) for b in node.bases]
        elif isinstance(node, ast.AnnAssign):
            attributes.append(ast.unparse(node.target))
    return functions, classes, attributes


def test_stubs_list_what_the_module_exports(native):
    functions, classes, attributes = stub_definitions()
    exported = {n for n in dir(native) if not n.startswith("_")} | {"__version__"}
    assert exported == set(functions) | set(classes) | set(attributes)
    for name in functions:
        assert callable(getattr(native, name)), name
    for name, bases in classes.items():
        cls = getattr(native, name)
        assert isinstance(cls, type), name
        assert [b.__name__ for b in cls.__bases__] == bases, name
    for name in attributes:
        assert not callable(getattr(native, name)), name


def test_stub_signatures_match_the_module(native):
    functions, _, _ = stub_definitions()
    for name, params in functions.items():
        sig = inspect.signature(getattr(native, name))
        actual = [(p.name, p.default) for p in sig.parameters.values()]
        assert actual == params, f"{name}: module {actual} vs stub {params}"
        kinds = {p.kind for p in sig.parameters.values()}
        assert kinds <= {inspect.Parameter.POSITIONAL_OR_KEYWORD}, name


def test_package_is_typed():
    assert (STUBS.parent / "py.typed").is_file()


# --------------------------------------------------------------------------------------
# Config objects against the simulator's schema
# --------------------------------------------------------------------------------------

EVERY_TABLE = {
    "machine": "small",
    "kernel": {"swap": {"capacity": "1GiB"}, "zram": {"capacity": "1GiB"}},
    "workloads": [{"type": "pmbench"}, {"type": "stream"}, {"type": "mlc"}],
}


def schema_tables(native) -> Dict[type, Dict[str, Any]]:
    """Builder class -> the table it mirrors in the effective config (all keys filled)."""
    eff = json.loads(native.check_config(tiermem.to_toml(EVERY_TABLE)))
    return {
        tiermem.Config: eff,
        tiermem.Machine: eff["machine"],
        tiermem.Node: eff["machine"]["nodes"][0],
        tiermem.Caches: eff["machine"]["caches"],
        tiermem.CacheLevel: eff["machine"]["caches"]["llc"],
        tiermem.Kernel: eff["kernel"],
        tiermem.NumaBalancing: eff["kernel"]["numa"],
        tiermem.Swap: eff["kernel"]["swap"],
        tiermem.Zram: eff["kernel"]["zram"],
        tiermem.KernelCosts: eff["kernel"]["costs"],
        tiermem.Sim: eff["sim"],
        tiermem.Pmbench: eff["workloads"][0],
        tiermem.Stream: eff["workloads"][1],
        tiermem.Mlc: eff["workloads"][2],
        tiermem.MemPolicy: eff["workloads"][0]["policy"],
    }


def test_config_objects_have_every_key_of_the_schema(native):
    for cls, table in schema_tables(native).items():
        expected = set(table) - {"type"}
        if cls is tiermem.Machine:
            expected |= {"preset"}  # input-only: expanded away in the effective config
        if cls is tiermem.Kernel:
            # Optional: absent from the effective config when off or unset.
            expected |= {"ksm", "release"}
        assert set(cls.keys()) == expected, (
            f"{cls.__name__}: missing {sorted(expected - set(cls.keys()))}, "
            f"unknown {sorted(set(cls.keys()) - expected)}"
        )


def test_effective_config_round_trips_through_the_objects(native):
    eff = json.loads(native.check_config(tiermem.to_toml(EVERY_TABLE)))
    # Every key set (nulls dropped): the objects must write what the parser reads back.
    cfg = tiermem.Config.from_dict(eff)
    assert isinstance(cfg.machine, tiermem.Machine)
    assert isinstance(cfg.machine.nodes[0], tiermem.Node)
    assert isinstance(cfg.machine.caches.llc, tiermem.CacheLevel)
    assert isinstance(cfg.kernel.numa, tiermem.NumaBalancing)
    assert [type(w) for w in cfg.workloads] == [tiermem.Pmbench, tiermem.Stream, tiermem.Mlc]
    assert isinstance(cfg.workloads[0].policy, tiermem.MemPolicy)
    assert not cfg.extra and not cfg.kernel.extra and not cfg.workloads[2].extra
    assert json.loads(native.check_config(cfg.to_toml())) == eff
