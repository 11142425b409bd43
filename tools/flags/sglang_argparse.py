"""Builds SGLang's real server argument parser from an unpacked release wheel.

Run inside a fresh interpreter (one release per process):

    python sglang_argparse.py WHEEL_DIR dump          -> JSON of every argparse action
    python sglang_argparse.py WHEEL_DIR parse < cases -> JSON verdict per argv (one JSON list per line)

Heavy imports (torch, triton, transformers, CUDA bindings, ...) are replaced by inert stub
modules so that `ServerArgs.add_cli_args(parser)` -- SGLang's own code, unmodified -- runs on
any CPU machine. Nothing of SGLang's source is copied: the wheel is read from WHEEL_DIR.
"""

import abc
import argparse
import importlib
import importlib.abc
import importlib.machinery
import io
import json
import os
import sys
import types
import contextlib

# Packages actually installed in the generator's virtual environment (pure Python) and the
# standard library are imported for real; everything else is stubbed.
REAL = set(sys.stdlib_module_names) | {
    "sglang", "msgspec", "pydantic", "pydantic_core", "yaml", "typing_extensions",
    "annotated_types", "typing_inspection", "_distutils_hack", "dill",
}


# Dunder names Python itself probes (protocols, introspection): never faked.
_PROTOCOL = set(dir(object)) | set(dir(type)) | {
    "__wrapped__", "__signature__", "__func__", "__self__", "__get__", "__set__", "__delete__",
    "__set_name__", "__mro_entries__", "__class_getitem__", "__origin__", "__args__",
    "__parameters__", "__dataclass_fields__", "__dataclass_params__", "__iter__", "__len__",
    "__annotations__", "__path__", "__file__", "__spec__", "__loader__", "__all__",
    "__getattr__", "__call__", "__await__", "__aiter__", "__next__", "__enter__", "__exit__",
    "__fspath__", "__index__", "__int__", "__float__", "__bool__", "__copy__", "__deepcopy__",
    "__reduce_ex__", "__getstate__", "__setstate__", "__length_hint__", "__contains__",
    "__isabstractmethod__", "__abstractmethods__", "__orig_bases__", "__get_pydantic_core_schema__",
    "__get_pydantic_json_schema__", "__supertype__", "__version__", "__struct_fields__",
}


# Accelerator namespaces other than CUDA are absent (hasattr(torch, "npu") is False), so
# the stubbed machine is a CPU box with no NPU/XPU/HPU/MUSA/MLU plug-in installed.
# Triton has no active driver (so kernels modules take their CPU fallback).
_ABSENT = {"npu", "hpu", "musa", "mlu", "_XpuDeviceProperties", "get_current_target"}
# Dunder attributes third-party classes really have and SGLang reads at import time.
_FAKED_DUNDERS = {"__class_validators__"}


def _probed(name):
    if name.startswith("__") and name.endswith("__"):
        return name not in _FAKED_DUNDERS
    return name in _PROTOCOL or name in _ABSENT


class _StubMeta(abc.ABCMeta):
    def __getattr__(cls, name):
        if _probed(name):
            raise AttributeError(name)
        return _make(name)

    def __getitem__(cls, key):
        return cls

    def __setitem__(cls, key, value):
        pass

    def register(cls, *a, **k):
        # transformers' AutoConfig.register(name, cls) and friends.
        return a[-1] if a else None

    # A stubbed version compares as newer than any real one.
    def __lt__(cls, other):
        return False

    def __gt__(cls, other):
        return True

    __le__ = __lt__
    __ge__ = __gt__
    __hash__ = type.__hash__

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0

    def __int__(cls):
        return 0

    def __index__(cls):
        return 0

    def __float__(cls):
        return 0.0

    def __call__(cls, *a, **k):
        # Used as a decorator: keep the decorated function.
        if len(a) == 1 and not k and callable(a[0]) and not isinstance(a[0], _StubMeta):
            return a[0]
        return type.__call__(cls, *a, **k)


class _Stub(metaclass=_StubMeta):
    def __init__(self, *a, **k):
        pass

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        from pydantic_core import core_schema

        return core_schema.any_schema()

    def __init_subclass__(cls, **k):
        pass

    def __getattr__(self, name):
        if _probed(name):
            raise AttributeError(name)
        return _make(name)

    def __call__(self, *a, **k):
        if len(a) == 1 and not k and callable(a[0]):
            return a[0]
        return _Stub()

    def __iter__(self):
        return iter(())

    def __getitem__(self, k):
        return _Stub()

    def __setitem__(self, k, v):
        pass

    def __bool__(self):
        return False

    def __len__(self):
        return 0

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def __int__(self):
        return 0

    def __index__(self):
        return 0

    def __float__(self):
        return 0.0

    def __str__(self):
        return "stub"

    def __fspath__(self):
        return "/nonexistent"

    def __lt__(self, o):
        return False

    def __gt__(self, o):
        return True

    __le__ = __lt__
    __ge__ = __gt__

    def __hash__(self):
        return 0

    def __eq__(self, o):
        return isinstance(o, _Stub)

    def __mro_entries__(self, bases):
        return (_Stub,)


def _make(name):
    return _StubMeta(str(name), (_Stub,), {})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if _probed(name):
            raise AttributeError(name)
        return _make(name)


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        m = _StubModule(spec.name)
        m.__path__ = []
        m.__file__ = "<stub>"
        m.__version__ = "99.0.0"
        return m

    def exec_module(self, module):
        pass


class _StubFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        top = fullname.split(".")[0]
        if top in REAL:
            return None
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


def install_stubs(wheel_dir):
    sys.path.insert(0, wheel_dir)
    sys.meta_path.insert(0, _StubFinder())
    # importlib.metadata.version("torch") and friends: a plausible version for stubs.
    import importlib.metadata as md

    real_version = md.version

    def version(name):
        try:
            return real_version(name)
        except md.PackageNotFoundError:
            return "99.0.0"

    md.version = version


def build_parser():
    """The parser exactly as the release's `prepare_server_args` builds it."""
    with contextlib.redirect_stdout(io.StringIO()):
        sa = importlib.import_module("sglang.srt.server_args")
    parser = argparse.ArgumentParser(prog="sglang serve")
    sa.ServerArgs.add_cli_args(parser)
    return parser


def action_kind(a):
    names = [c.__name__ for c in type(a).__mro__]
    for cls, kind in [
        ("_StoreTrueAction", "store_true"),
        ("_StoreFalseAction", "store_false"),
        ("_StoreConstAction", "store_const"),
        ("_AppendConstAction", "append_const"),
        ("_AppendAction", "append"),
        ("_CountAction", "count"),
        ("_StoreAction", "store"),
        ("BooleanOptionalAction", "boolean_optional"),
        ("_HelpAction", "help"),
        ("_VersionAction", "version"),
    ]:
        if cls in names:
            return kind
    # A custom Action subclass: what matters to argv is how many values it takes.
    return "store_true" if a.nargs == 0 else "store"


PROBES = ["1", "-3", "2.5", "1e3", "abc", "true", "False", "{\"a\": 1}", "nan", "0x10", "{}",
          "32k", "1Ki"]


def type_kind(t):
    if t is None:
        return "str"
    if t is int:
        return "int"
    if t is float:
        return "float"
    if t is str:
        return "str"
    # A custom converter: record which probe strings it accepts (behaviour, not code).
    ok = []
    for p in PROBES:
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                t(p)
            ok.append(p)
        except Exception:
            pass
    if ok == PROBES:
        return "str"
    if set(ok) == {"1", "-3", "1e3", "2.5", "nan"} or set(ok) == {"1", "-3", "2.5", "1e3", "nan"}:
        return "float"
    if set(ok) == {"1", "-3"}:
        return "int"
    if set(ok) == {"1", "-3", "32k", "1Ki"}:
        # `utils/common.py: human_readable_int` (0.5.2x): an int, or SI / IEC suffixes.
        return "human_int"
    if "{\"a\": 1}" in ok and "abc" not in ok:
        return "json"
    if ok == ["{}"]:
        # e.g. parse_cuda_graph_config_arg: a JSON object whose keys it checks itself.
        return "json_object"
    if set(ok) <= {"1", "true", "False"} and "true" in ok:
        return "bool"
    return "custom:" + getattr(t, "__name__", type(t).__name__) + ":" + ",".join(ok)


def jsonable(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else str(v)
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, _Stub) or isinstance(v, _StubMeta):
        return None
    return str(v)


def dump(parser):
    out = []
    for a in parser._actions:
        if not a.option_strings:
            continue
        kind = action_kind(a)
        if kind in ("help", "version"):
            continue
        nargs = a.nargs
        if kind in ("store_true", "store_false", "store_const", "append_const", "count"):
            nargs = 0
        # nargs None (one value, stored bare) stays null; an int N stores a list of N.
        choices = None
        if a.choices is not None:
            choices = [str(c) for c in a.choices]
            if isinstance(a.choices, (set, frozenset)):
                choices = sorted(choices)
        out.append({
            "options": list(a.option_strings),
            "dest": a.dest,
            "action": kind,
            "nargs": nargs,
            "type": type_kind(a.type) if nargs != 0 else None,
            "choices": choices,
            "default": jsonable(a.default) if a.default is not argparse.SUPPRESS else None,
            "const": jsonable(a.const) if kind == "store_const" else None,
            "required": bool(a.required),
        })
    return {"allow_abbrev": parser.allow_abbrev, "prefix_chars": parser.prefix_chars, "actions": out}


def serve_argv(argv):
    """`sglang serve` argv as the release's own `cli/serve.py` hands it to the parser."""
    serve = importlib.import_module("sglang.cli.serve")
    out = serve._extract_model_type_override(list(argv))
    argv = out[1] if isinstance(out, tuple) else argv
    norm = getattr(serve, "_normalize_positional_model_path", None)
    if norm is not None:
        argv = norm(list(argv))[0]
    return list(argv)


def parse_many(parser, lines):
    """Each line: {"argv": [...], "serve": bool}. Returns the verdict of parse_args."""
    results = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        case = json.loads(line)
        argv = case["argv"]
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                if case.get("serve"):
                    argv = serve_argv(argv)
                ns = parser.parse_args(argv)
            results.append({"ok": True, "argv": argv,
                            "values": {k: jsonable(v) for k, v in sorted(vars(ns).items())}})
        except SystemExit as e:
            msg = err.getvalue().strip().splitlines()
            last = msg[-1] if msg else f"exit {e.code}"
            results.append({"ok": False, "argv": argv,
                            "error": last.removeprefix(parser.prog + ": error: ")})
        except Exception as e:  # serve helpers raise ValueError on a bad --model-type
            results.append({"ok": False, "argv": argv, "error": f"{type(e).__name__}: {e}"})
    return results


if __name__ == "__main__":
    wheel_dir, mode = sys.argv[1], sys.argv[2]
    install_stubs(wheel_dir)
    parser = build_parser()
    if mode == "dump":
        json.dump(dump(parser), sys.stdout, sort_keys=True)
    elif mode == "parse":
        json.dump(parse_many(parser, sys.stdin.read().splitlines()), sys.stdout)
    else:
        sys.exit(f"unknown mode {mode}")
